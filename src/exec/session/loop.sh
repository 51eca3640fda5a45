# fabricplan's session on a host: one per host per run, started once (`/bin/sh -c LOOP
# fabricplan-session TOKEN [WINDOW [LIMIT]]`), reading requests on stdin and answering on
# stdout. Plain POSIX sh plus setsid, mkfifo, mktemp, base64 and grep; nothing is installed.
# Comment lines are taken out before it is sent.
#
# The host is a shared machine: everything of the run lives in one private directory made
# fresh by `mktemp -d` (mode 0700, owned by the run's user, a name nobody can predict), every
# job in a directory of its own inside it; nothing is written anywhere else, and the directory
# is removed when the session ends, however it ends (a session killed before it could clean up
# is cleaned up by the next one of the same user on that host). A job's process group is the
# one its watcher started, kept in that watcher's memory, never read back from a file; every
# process of a job carries FABRICPLAN_JOB=TOKEN.ID. in its environment, so one that left its
# group or session is still found (by that mark and by being ours) and stopped when the job
# ends, and reported. Each output stream of a job is bounded (`ulimit -f`: a tool that writes
# past LIMIT blocks of 512 bytes, default 64 MiB, gets SIGXFSZ).
#
# Requests (one line each; a script follows `r`, `s` and `b` up to a line holding END alone):
#   r ID END   run the script as job ID: its own session and process group (setsid), stdin
#              /dev/null, stdout and stderr to files of its own (like every background
#              command of a non-interactive shell, it ignores SIGINT and SIGQUIT: jobs are
#              stopped with TERM, then KILL)
#   s ID END   the same, staged: stdin is a FIFO the job waits on at its gate
#   b ID END   the same, a job that runs until stopped (a server): its start says when
#   g ID       release staged job ID (`go` on its FIFO)
#   w ID       withdraw it (`no`: it ends unrun)
#   k ID       stop job ID: TERM to the process group its watcher recorded, KILL after 2 s
#   h          nothing (the controller's heartbeat, every few seconds)
#   x          end: every job still running is stopped
# End of input counts as `x`. So does silence: a watchdog ends the session when no request came
# for two of its windows in a row (10 s, or WINDOW s; the controller gone without closing its
# side, as when a Slurm step's srun is told the node failed while the step runs on). So does
# TERM, HUP or INT.
#
# Answers, written by one process only (the writer below), so they never interleave:
#   @fp H TOKEN PID LIMIT DIR  the session is up (LIMIT: the output bound, in 512-byte blocks)
#   @fp F WHY                  it could not start
#   @fp P ID PGID [NS]         job ID started, in process group PGID (a `b` job: at NS, the
#                              host's clock in ns)
#   @fp A ID                   staged job ID waits at its gate (written by the job itself)
#   @fp D ID STATUS            job ID ended (128 + N for signal N), then its stdout, its stderr
#                              and the processes it left behind that were stopped (`PID NAME`
#                              lines), each as base64 lines closed by a line `.`
#   @fp Q                      the session ends
t=$1
ww=${2:-10}
lim=${3:-131072}
case $t in ''|*[!0-9a-f]*) echo "@fp F the session's token is not a hex word"; exit 1 ;; esac
case $ww$lim in *[!0-9]*) echo "@fp F the session's window and limit are not numbers"; exit 1 ;; esac
umask 077
b=${TMPDIR:-/tmp}
nl='
'
# st PID: its start time (field 22 of /proc/PID/stat, ticks since boot) into s_; false when gone
st() {
  s_=
  read -r s_ 2>/dev/null <"/proc/$1/stat" || return 1
  s_=${s_##*) }
  set -- $s_
  [ $# -ge 20 ] || return 1
  shift 19
  s_=$1
}
# ls_ MARK: the pids of this user's processes whose environment holds MARK, into l_
ls_() {
  l_=
  for e_ in $(grep -l -F -e "$1" /proc/[0-9]*/environ 2>/dev/null); do
    x_=${e_#/proc/}
    x_=${x_%/environ}
    [ -O "/proc/$x_" ] && l_="$l_ $x_"
  done
}
# sw MARK [FILE]: stop them (TERM, KILL after a second), each written `PID NAME` to FILE
sw() {
  ls_ "$1"
  [ -n "$l_" ] || return 0
  if [ -n "$2" ]; then
    for x_ in $l_; do
      c_=
      read -r c_ 2>/dev/null <"/proc/$x_/comm"
      printf '%s %s\n' "$x_" "$c_"
    done >>"$2"
  fi
  kill -TERM $l_ 2>/dev/null
  n_=0
  while [ $n_ -lt 50 ]; do
    ls_ "$1"
    [ -n "$l_" ] || return 0
    sleep 0.02
    n_=$((n_ + 1))
  done
  kill -KILL $l_ 2>/dev/null
}
# al PGID: true while the group has a member that is not a zombie (without ps: kill -0 alone)
al() {
  kill -0 -"$1" 2>/dev/null || return 1
  a_=$(ps -eo pgid=,stat= 2>/dev/null) || return 0
  printf '%s\n' "$a_" | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { f = 1 } END { exit !f }'
}
# earlier sessions of this user on this host whose loop is gone without cleaning up (killed
# with everything it started): what they left running is stopped and their directory removed
for o in "$b"/fabricplan-session.*; do
  [ -d "$o" ] && [ ! -L "$o" ] && [ -O "$o" ] || continue
  op=
  read -r op os ot 2>/dev/null <"$o/pid" || continue
  case $op$os in ''|*[!0-9]*) continue ;; esac
  case $ot in ''|*[!0-9a-f]*) continue ;; esac
  if st "$op"; then
    [ "$s_" = "$os" ] && continue
  elif [ ! -d /proc/self ] && kill -0 "$op" 2>/dev/null; then
    continue
  fi
  sw "FABRICPLAN_JOB=$ot."
  rm -rf "$o"
done
d=$(mktemp -d "$b/fabricplan-session.XXXXXX" 2>&1) || { echo "@fp F cannot create the run's directory under $b: ${d%%"$nl"*}"; exit 1; }
[ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ] || { echo "@fp F cannot create the run's directory under $b: $d is not a private directory"; exit 1; }
for x in setsid base64 mkfifo grep; do
  command -v "$x" >/dev/null 2>&1 || { echo "@fp F $x is not installed"; rm -rf "$d"; exit 1; }
done
st $$ || s_=0
echo "$$ $s_ $t" >"$d/pid" || { echo "@fp F cannot write in the run's directory $d"; rm -rf "$d"; exit 1; }
q=$d/q
mkfifo -m 600 "$q" || { echo "@fp F cannot create a FIFO in $d"; rm -rf "$d"; exit 1; }
# fd 4 keeps the queue open for writing while the loop lives: the writer sees its end only
# once the loop is gone (killed, or ended), and then ends too, closing the channel
exec 4<>"$q"
(
  exec 3<"$q" 4>&-
  trap '' HUP INT
  while IFS=' ' read -r k i a; do
    case $k in
      D) printf '@fp D %s %s\n' "$i" "$a"
         for x in o e l; do
           [ -s "$d/$i.$x" ] && base64 <"$d/$i.$x"
           echo .
         done
         rm -f "$d/$i.o" "$d/$i.e" "$d/$i.l" ;;
      Q) echo '@fp Q'; exit 0 ;;
      *) printf '@fp %s %s %s\n' "$k" "$i" "$a" ;;
    esac
  done <&3
) &
exec >/dev/null 2>>"$d/err"
lp=$$
# the end: every job still running stopped, by the process group its watcher recorded (a
# watcher known to this shell) and by the mark its processes carry; the writer told to quit
z() {
  for f in "$d"/*.s; do
    [ -f "$f" ] || continue
    i=${f##*/}
    i=${i%.s}
    case $i in ''|*[!0-9]*) continue ;; esac
    eval "x=\${w$i:-}"
    [ -n "$x" ] && kill -USR1 "$x" 2>/dev/null
  done
  sw "FABRICPLAN_JOB=$t."
  n=0
  while [ $n -lt 150 ]; do
    set -- "$d"/*.s
    [ -e "$1" ] || break
    sleep 0.02
    n=$((n + 1))
  done
  echo Q 1<>"$q"
}
# the watchdog: every request marks `beat`; a window ($ww s) with no mark, twice in a row, the
# loop found gone (killed), or TERM, HUP or INT (a signal to the whole group), and the session
# is ended from here: its jobs stopped, the directory removed
(
  exec 4>&-
  sp=
  trap 'kill "$sp" 2>/dev/null; exit 0' USR2
  trap 'g=1' TERM HUP INT
  g=
  m=0
  n=0
  : >"$d/t"
  while :; do
    sleep 1 &
    sp=$!
    wait "$sp"
    [ -z "$g" ] || break
    kill -0 "$lp" 2>/dev/null || break
    n=$((n + 1))
    [ $n -lt "$ww" ] && continue
    n=0
    if [ "$d/beat" -nt "$d/t" ]; then m=0; else m=$((m + 1)); fi
    : >"$d/t"
    [ $m -lt 2 ] || break
  done
  kill "$sp" 2>/dev/null
  kill -KILL "$lp" 2>/dev/null
  z
  rm -rf "$d"
  exit 0
) &
wd=$!
# a job's watcher: starts it in its own directory, says its process group, waits for it, stops
# what it left behind, says how it ended
j() {
  f=$d/$2
  exec 4>&-
  mkdir "$f.w" || { rm -f "$f.s"; echo "D $2 126" 1<>"$q"; return; }
  if [ "$1" = s ]; then
    mkfifo -m 600 "$f.g" && exec 5<>"$f.g" || { rm -rf "$f.w" "$f.s"; echo "D $2 126" 1<>"$q"; return; }
  else
    exec 5</dev/null
  fi
  p=
  h=
  # `k ID`: TERM to the group, KILL after 2 s; its leader is not reaped before this ends, so
  # the group cannot be anyone else's. Told before the job made its group (the `P` line is out
  # as soon as it is forked), the job itself is ended before it can start anything
  trap 'h=1; [ -z "$p" ] || { kill -TERM -"$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null; n=0; while [ $n -lt 100 ] && al "$p"; do sleep 0.02; n=$((n + 1)); done; kill -KILL -"$p" 2>/dev/null; }' USR1
  (
    cd "$f.w" && ulimit -f "$lim" || exit 126
    FABRICPLAN_JOB=$t.$2.
    export FABRICPLAN_JOB
    exec setsid /bin/sh "$f.s"
  ) <&5 >"$f.o" 2>"$f.e" 5<&- &
  p=$!
  if [ "$1" = b ]; then
    echo "P $2 $p $(date +%s%N)" 1<>"$q"
  else
    echo "P $2 $p" 1<>"$q"
  fi
  exec 5<&-
  r=
  while :; do
    h=
    wait "$p"
    x=$?
    [ "$x" = 127 ] && [ -n "$r" ] && break
    r=$x
    [ -n "$h" ] || break
  done
  trap '' USR1
  rm -f "$f.s" "$f.g"
  # what it left in its group, then what left the group but carries its mark
  if kill -0 -"$p" 2>/dev/null; then
    ps -eo pid=,pgid=,comm= 2>/dev/null | awk -v g="$p" '$2 == g { print $1, $3 }' >>"$f.l"
    kill -TERM -"$p" 2>/dev/null
    n=0
    while [ $n -lt 50 ] && al "$p"; do sleep 0.02; n=$((n + 1)); done
    kill -KILL -"$p" 2>/dev/null
  fi
  sw "FABRICPLAN_JOB=$t.$2." "$f.l"
  rm -rf "$f.w"
  echo "D $2 $r" 1<>"$q"
}
trap 'kill -USR2 "$wd" 2>/dev/null; z; rm -rf "$d"; exit 0' TERM HUP INT
echo "H $t $$ $lim $d" >&4
while IFS=' ' read -r c i e; do
  : >"$d/beat"
  case $i in *[!0-9]*) continue ;; esac
  case $c in
    r|s|b)
      [ -n "$i" ] || continue
      ok=
      while IFS= read -r l; do
        if [ "$l" = "$e" ]; then ok=1; break; fi
        printf '%s\n' "$l"
      done >"$d/$i.s"
      [ -n "$ok" ] || break
      j "$c" "$i" &
      eval "w$i=\$!" ;;
    g) echo go 1<>"$d/$i.g" ;;
    w) echo no 1<>"$d/$i.g" ;;
    k) [ -n "$i" ] && [ -f "$d/$i.s" ] && eval "x=\${w$i:-}" && [ -n "$x" ] && kill -USR1 "$x" 2>/dev/null ;;
    x) break ;;
  esac
done
kill -USR2 "$wd" 2>/dev/null
z
wait
rm -rf "$d"

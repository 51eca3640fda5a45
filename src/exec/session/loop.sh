# fabricplan's session on a host: one per host per run, started once (`/bin/sh -c LOOP
# fabricplan-session TOKEN`), reading requests on stdin and answering on stdout. Plain POSIX sh
# plus setsid, mkfifo, mktemp and base64; nothing is installed, and its directory is removed
# when it ends. Comment lines are taken out before it is sent.
#
# Requests (one line each; a script follows `r` and `s` up to a line holding END alone):
#   r ID END   run the script as job ID: its own session and process group (setsid), stdin
#              /dev/null, stdout and stderr to files of its own (like every background
#              command of a non-interactive shell, it ignores SIGINT and SIGQUIT: jobs are
#              stopped with TERM, then KILL)
#   s ID END   the same, staged: stdin is a FIFO the job waits on at its gate
#   g ID       release staged job ID (`go` on its FIFO)
#   w ID       withdraw it (`no`: it ends unrun)
#   h          nothing (the controller's heartbeat, every few seconds)
#   x          end: every job still running is stopped by its recorded process group
# End of input counts as `x`. So does silence: a watchdog ends the session when no request came
# for two of its windows in a row (10 s, or `$2` s; the controller gone without closing its
# side, as when a Slurm step's srun is told the node failed while the step runs on).
#
# Answers, written by one process only (the writer below), so they never interleave:
#   @fp H TOKEN PID DIR        the session is up
#   @fp F WHY                  it could not start
#   @fp P ID PGID              job ID started, in process group PGID
#   @fp A ID                   staged job ID waits at its gate (written by the job itself)
#   @fp D ID STATUS            job ID ended (128 + N for signal N), then its stdout and its
#                              stderr, each as base64 lines closed by a line `.`
#   @fp Q                      the session ends
t=$1
ww=${2:-10}
d=$(mktemp -d "${TMPDIR:-/tmp}/fabricplan-session.XXXXXX") || { echo "@fp F cannot create a session directory under ${TMPDIR:-/tmp}"; exit 1; }
for x in setsid base64 mkfifo; do
  command -v "$x" >/dev/null 2>&1 || { echo "@fp F $x is not installed"; rm -rf "$d"; exit 1; }
done
q=$d/q
mkfifo -m 600 "$q" || { echo "@fp F cannot create a FIFO in $d"; rm -rf "$d"; exit 1; }
# fd 4 keeps the queue open for writing while the loop lives: the writer sees its end only
# once the loop is gone (killed, or ended), and then ends too, closing the channel
exec 4<>"$q"
(
  exec 3<"$q" 4>&-
  while IFS=' ' read -r k i a; do
    case $k in
      D) printf '@fp D %s %s\n' "$i" "$a"
         [ -s "$d/$i.o" ] && base64 <"$d/$i.o"; echo .
         [ -s "$d/$i.e" ] && base64 <"$d/$i.e"; echo .
         rm -f "$d/$i.o" "$d/$i.e" ;;
      Q) echo '@fp Q'; exit 0 ;;
      *) printf '@fp %s %s %s\n' "$k" "$i" "$a" ;;
    esac
  done <&3
) &
exec >/dev/null 2>>"$d/err"
lp=$$
# the end: every job still running, by the process group it recorded (TERM, KILL after 2 s);
# the writer told to quit; the directory removed
z() {
  for f in "$d"/*.p; do [ -f "$f" ] && read -r p <"$f" && kill -TERM -"$p" 2>/dev/null; done
  n=0
  while [ $n -lt 100 ]; do
    set -- "$d"/*.p
    [ -e "$1" ] || break
    sleep 0.02; n=$((n + 1))
  done
  for f in "$d"/*.p; do [ -f "$f" ] && read -r p <"$f" && kill -KILL -"$p" 2>/dev/null; done
  echo Q 1<>"$q"
}
# the watchdog: every request marks `beat`; a window ($ww s) with no mark, twice in a row, or
# the loop found gone (killed), and the session is ended from here: its jobs stopped by their
# recorded process groups, the directory removed
(
  exec 4>&-
  m=0
  while :; do
    sleep "$ww" & echo $! >"$d/w"; wait $!
    if [ "$d/beat" -nt "$d/w" ]; then m=0; else m=$((m + 1)); fi
    kill -0 "$lp" 2>/dev/null && [ $m -lt 2 ] && continue
    kill -KILL "$lp" 2>/dev/null
    z
    sleep 1
    rm -rf "$d"
    exit 0
  done
) &
w=$!
# a job's watcher: starts it, says its process group, waits for it, says how it ended
j() {
  f=$d/$2
  exec 4>&-
  if [ "$1" = s ]; then
    mkfifo -m 600 "$f.g" && exec 5<>"$f.g" || { echo "D $2 126" 1<>"$q"; return; }
  else
    exec 5</dev/null
  fi
  setsid /bin/sh "$f.s" <&5 >"$f.o" 2>"$f.e" 5<&- &
  p=$!
  echo "$p" >"$f.p"
  echo "P $2 $p" 1<>"$q"
  exec 5<&-
  wait "$p"; r=$?
  rm -f "$f.p" "$f.s" "$f.g"
  echo "D $2 $r" 1<>"$q"
}
echo "H $t $$ $d" >&4
while IFS=' ' read -r c i e; do
  : >"$d/beat"
  case $i in *[!0-9]*) continue ;; esac
  case $c in
    r|s)
      ok=
      while IFS= read -r l; do
        if [ "$l" = "$e" ]; then ok=1; break; fi
        printf '%s\n' "$l"
      done >"$d/$i.s"
      [ -n "$ok" ] || break
      j "$c" "$i" & ;;
    g) echo go 1<>"$d/$i.g" ;;
    w) echo no 1<>"$d/$i.g" ;;
    x) break ;;
  esac
done
kill "$w" 2>/dev/null
read -r s <"$d/w" && kill "$s" 2>/dev/null
z
wait
rm -rf "$d"

//! The page's inline script and style sheet.

/// The script: errors and policy violations kept from the first moment, layout facts written
/// into `<body data-facts>` once the page is laid out (tests read them from the DOM).
pub(super) const SCRIPT: &str = r#"(function(){var errors=[];var ce=console.error;console.error=function(){errors.push(Array.prototype.join.call(arguments,' '));return ce.apply(console,arguments);};window.addEventListener('error',function(e){errors.push('error: '+(e.message||(e.target&&e.target.outerHTML)||'?'));},true);document.addEventListener('securitypolicyviolation',function(e){errors.push('csp: '+e.violatedDirective+' '+e.blockedURI);});function box(id){var el=document.getElementById(id);if(!el){return null;}var r=el.getBoundingClientRect();return {top:r.top,bottom:r.bottom,left:r.left,right:r.right,width:r.width,height:r.height};}window.addEventListener('load',function(){var cells=[];document.querySelectorAll('.hm-cell').forEach(function(c){cells.push(c.getAttribute('data-pair'));});var f={verdict:box('verdict'),verdict_text:(document.getElementById('verdict')||{}).textContent,fix:box('fix'),viewport:{width:window.innerWidth,height:window.innerHeight},scroll_width:document.documentElement.scrollWidth,cells:cells,fix_groups:document.querySelectorAll('.fix-group').length,rounds:document.querySelectorAll('.round').length,nccl_charts:document.querySelectorAll('.nccl-chart').length,fabric_nodes:document.querySelectorAll('.fab-node').length,fabric_marked:document.querySelectorAll('.fab-fail,.fab-warn').length,errors:errors};document.body.setAttribute('data-facts',JSON.stringify(f));});})();"#;

pub(super) const STYLE: &str = r#"
:root{--ok:#1a7f37;--warn:#9a6700;--fail:#cf222e;--ink:#1f2328;--mute:#59636e;--line:#d1d9e0;--bg:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:#fff}
main{max-width:1240px;margin:0 auto;padding:16px 24px 48px}
header.top{display:flex;flex-wrap:wrap;align-items:center;gap:12px 24px;padding:14px 18px;border:1px solid var(--line);border-radius:8px;background:var(--bg)}
.id{flex:1 1 420px;min-width:0}
.id h1{font-size:18px;margin:0 0 2px}
.id .meta{color:var(--mute);font-size:12.5px;overflow-wrap:anywhere}
#verdict{font-size:26px;font-weight:700;padding:6px 18px;border-radius:6px;color:#fff;white-space:nowrap}
#verdict.ok{background:var(--ok)}#verdict.warn{background:var(--warn)}#verdict.fail{background:var(--fail)}
.counts{font-size:13px;color:var(--mute)}
.counts b.ok{color:var(--ok)}.counts b.warn{color:var(--warn)}.counts b.fail{color:var(--fail)}
.sim{margin-top:10px;padding:6px 12px;border:1px dashed var(--warn);border-radius:6px;color:var(--warn);font-weight:600;font-size:13px}
h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:14px;margin:16px 0 6px}
.note{color:var(--mute);font-size:12.5px}
.todo{color:var(--warn);font-size:12.5px}
.badge{display:inline-block;white-space:nowrap;min-width:44px;text-align:center;font-size:11px;font-weight:700;padding:1px 6px;border-radius:10px;color:#fff}
.badge.ok{background:var(--ok)}.badge.warn{background:var(--warn)}.badge.fail{background:var(--fail)}
.fix-group{border:1px solid var(--line);border-left:5px solid var(--line);border-radius:6px;padding:8px 12px;margin:8px 0}
.fix-group.fail{border-left-color:var(--fail)}.fix-group.warn{border-left-color:var(--warn)}
.fix-group .trap{font-weight:700;font-size:14.5px}
.fix-group .fixtext{margin:4px 0 6px;padding:4px 8px;background:var(--bg);border-radius:4px}
.fix-group ul{margin:4px 0 0;padding-left:20px}
.fix-group li{margin:2px 0;overflow-wrap:anywhere}
.good{padding:10px 14px;border:1px solid var(--line);border-left:5px solid var(--ok);border-radius:6px}
table{border-collapse:collapse;width:100%;font-size:12.5px}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:anywhere}
th{background:var(--bg);font-weight:600}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
.grid{display:flex;flex-wrap:wrap;gap:18px 28px;align-items:flex-start}
figure{margin:0}
figcaption{font-weight:600;font-size:13px;margin-bottom:4px}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
.round{margin:10px 0 14px}
.nccl-chart{display:flex;flex-wrap:wrap;gap:8px 20px;align-items:flex-start;width:100%}
.nccl-chart figcaption{flex:1 1 100%}
.nccl-chart svg{flex:0 0 auto}
.nccl-chart table{flex:1 1 380px;width:auto}
.round h3{margin:0 0 4px}
.legend{display:flex;gap:14px;flex-wrap:wrap;align-items:center;font-size:12px;color:var(--mute);margin:4px 0 8px}
.swatch{display:inline-block;width:14px;height:10px;border-radius:2px;vertical-align:middle;margin-right:4px}
details summary{cursor:pointer;color:var(--mute)}
footer{margin-top:32px;color:var(--mute);font-size:12px}
"#;

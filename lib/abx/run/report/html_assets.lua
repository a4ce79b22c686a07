-- abx.run.report.html_assets: the inline stylesheet and script of the HTML report
-- (abx.run.report.html). Both are written into the page itself: the report loads nothing, so it
-- works from file:// and as a CI artifact with no network.
-- The script only filters, opens and copies: every text it shows was escaped in Lua
-- (abx.run.report.html.escape); it never builds markup from data (no innerHTML).
local M = {}

M.CSS = [[
:root{--pass:#1a7f37;--fail:#cf222e;--skip:#8c959f;--xfail:#9a6700;--xpass:#8250df;--err:#bc4c00;
--bg:#fff;--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--code:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;padding:0 24px 48px;color:var(--fg);
background:var(--bg)}
h1{font-size:20px;margin:16px 0 4px}h2{font-size:16px;margin:24px 0 8px;border-bottom:1px solid var(--line);
padding-bottom:4px}
h3{font-size:14px;margin:16px 0 4px}h4{font-size:13px;margin:10px 0 4px;color:var(--muted)}
pre{background:var(--code);border:1px solid var(--line);border-radius:4px;padding:8px;overflow:auto;max-height:480px;
margin:4px 0;font:12px/1.4 ui-monospace,"DejaVu Sans Mono",monospace;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid var(--line);padding:2px 8px;text-align:left;
vertical-align:top;font-size:13px}
th{background:var(--code)}
.meta{color:var(--muted)}.meta b{color:var(--fg)}.summary .meta span{white-space:nowrap;margin-right:14px}
.counts span{display:inline-block;margin:4px 8px 4px 0;padding:2px 10px;border-radius:12px;color:#fff;font-weight:600}
.o-passed{background:var(--pass)}.o-failed{background:var(--fail)}.o-skipped{background:var(--skip)}
.o-xfailed{background:var(--xfail)}.o-xpassed{background:var(--xpass)}.o-error{background:var(--err)}
.o-rerun{background:#0969da}
.exit{font-weight:700}.exit0{color:var(--pass)}.exitn{color:var(--fail)}
.filters{position:sticky;top:0;background:var(--bg);padding:8px 0;border-bottom:1px solid var(--line);z-index:2}
.filters label{margin-right:12px;cursor:pointer}.filters input[type=search]{width:320px;padding:3px 6px}
.file{margin:12px 0}.file>h3{font-family:ui-monospace,monospace}
.test{border:1px solid var(--line);border-radius:4px;margin:3px 0}
.test>summary,.test>.row{padding:3px 8px;cursor:pointer;list-style:none;display:flex;gap:8px;align-items:baseline}
.test>.row{cursor:default}
.test>summary::-webkit-details-marker{display:none}
.test>summary::before{content:"\25b8";color:var(--muted)}.test[open]>summary::before{content:"\25be"}
.badge{display:inline-block;min-width:62px;text-align:center;border-radius:3px;color:#fff;font-size:11px;
font-weight:700;padding:1px 4px;text-transform:uppercase}
.name{flex:1;word-break:break-word}.dur{color:var(--muted);font-variant-numeric:tabular-nums}
.tag{font-size:11px;border:1px solid var(--line);border-radius:10px;padding:0 6px;color:var(--muted)}
.ki{border-color:var(--xfail);color:var(--xfail)}
.body{padding:4px 12px 10px;border-top:1px solid var(--line)}
.del{color:var(--fail)}.ins{color:var(--pass)}.hunk{color:#0969da}
.exchange{border-left:3px solid var(--line);margin:4px 0;padding-left:6px}
.exchange>summary{cursor:pointer;font:12px ui-monospace,monospace}
.s2{color:var(--pass)}.s4,.s5,.serr{color:var(--fail)}
.repro{position:relative}.copy{float:right;margin:2px 0 0 8px;cursor:pointer}
.hidden{display:none}
svg.timeline{width:100%;border:1px solid var(--line);background:#fff}
svg .lane{font:11px sans-serif;fill:var(--muted)}svg .sbx{fill:#0969da;opacity:.45}svg .sbx.alive{fill:#bf8700}
svg .grid{stroke:#eaeef2}svg .tick{font:10px sans-serif;fill:var(--muted)}
svg rect.passed{fill:var(--pass)}svg rect.failed{fill:var(--fail)}svg rect.skipped{fill:var(--skip)}
svg rect.xfailed{fill:var(--xfail)}svg rect.xpassed{fill:var(--xpass)}svg rect.rerun{fill:#0969da}
.legend span{margin-right:12px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
]]

M.JS = [[
(function(){
"use strict";
var boxes=document.querySelectorAll(".filters input[type=checkbox]");
var text=document.getElementById("filter-text");
var shown=document.getElementById("shown");
function apply(){
  var on={},q=(text.value||"").toLowerCase(),n=0;
  boxes.forEach(function(b){on[b.value]=b.checked;});
  document.querySelectorAll(".file").forEach(function(f){
    var any=false;
    f.querySelectorAll(".test").forEach(function(t){
      var ok=on[t.getAttribute("data-outcome")]!==false&&(!q||t.getAttribute("data-search").indexOf(q)>=0);
      t.classList.toggle("hidden",!ok);if(ok){any=true;n++;}
    });
    f.classList.toggle("hidden",!any);
  });
  shown.textContent=String(n);
}
boxes.forEach(function(b){b.addEventListener("change",apply);});
text.addEventListener("input",apply);
function openHash(){
  var id=decodeURIComponent(location.hash.slice(1));if(!id)return;
  var el=document.getElementById(id);if(!el)return;
  if(el.tagName==="DETAILS")el.open=true;el.scrollIntoView();
}
window.addEventListener("hashchange",openHash);openHash();
document.querySelectorAll("button.copy").forEach(function(b){
  b.addEventListener("click",function(){
    var src=document.getElementById(b.getAttribute("data-target"));var s=src.textContent;
    function done(){b.textContent="copied";setTimeout(function(){b.textContent="copy";},1500);}
    function fallback(){var r=document.createRange();r.selectNodeContents(src);var sel=getSelection();
      sel.removeAllRanges();sel.addRange(r);try{document.execCommand("copy");done();}catch(e){}}
    if(navigator.clipboard&&navigator.clipboard.writeText){navigator.clipboard.writeText(s).then(done,fallback);}
    else fallback();
  });
});
apply();
})();
]]

return M

// The dashboard's one stylesheet, inlined in every page's <head> (the CSP allows inline styles and
// nothing fetched). Status colours (.s-<status>) and the narrow-screen rules that turn tables into
// cards (under 700 px) live here; the charts' series colours are the overview page's. It is the text
// of a <style>, which the JSX escapes and HTML does not unescape there: no quotes and no ">" in it
// (grid lines, not named areas). The overview's eight cards take at most four columns, each at
// least 9rem wide (4 + 4 on a wide screen, 2 + 2 + 2 + 2 on a phone; never 7 + 1). Under 700 px the
// section links scroll sideways on one line (the header keeps its three lines) and a shadow marks
// each edge with more beyond it: the white covers scroll with the links (local), the shadows stay
// (scroll), so a shadow shows only where the links go on.
export const DASHBOARD_STYLE = `
*{box-sizing:border-box}
body{font-family:system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa;line-height:1.4}
a{color:#0b57d0}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible,main:focus-visible{outline:3px solid #f9a825;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:.5rem;top:.5rem;background:#fff;padding:.3rem;z-index:2}
header{background:#fff;border-bottom:1px solid #ddd;padding:.6rem 1rem;display:flex;flex-wrap:wrap;gap:.5rem 1.2rem;align-items:center}
header .brand{font-weight:700}header nav{display:flex;gap:1rem}header nav a[aria-current]{font-weight:700;text-decoration:none;color:#1d1d1f}
.session{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin-left:auto;font-size:.9rem}
.session #operator{width:9rem}
main{padding:1rem;max-width:1200px;margin:0 auto}main:focus{outline:none}
h1{font-size:1.4rem;margin:.2rem 0 .8rem}h1.id,.id{overflow-wrap:anywhere}h2{font-size:1.1rem;margin:1.4rem 0 .5rem}
#notice{margin:0;padding:0 1rem;font-weight:600}#notice.ok{color:#1b5e20}#notice.warn{color:#8a5300}#notice.error{color:#b71c1c}
#notice:not(:empty){padding:.4rem 1rem;background:#fff;border-bottom:1px solid #ddd}
.as-of{color:#555}
button{font:inherit;padding:.25rem .7rem;border:1px solid #888;border-radius:4px;background:#fff;cursor:pointer}
input,select{font:inherit;padding:.2rem .3rem;max-width:100%}
.status{display:inline-block;padding:0 .4rem;border-radius:3px;font-size:.85rem;color:#fff;background:#616161}
.s-completed,.s-published{background:#2e7d32}.s-ignored{background:#757575}.s-received,.s-processing,.s-pending{background:#1565c0}
.s-failed{background:#e65100}.s-parked{background:#6a1b9a}.s-dead_letter,.s-dead{background:#b71c1c}
.counts,.tabs{display:flex;flex-wrap:wrap;gap:.4rem .9rem;margin:.3rem 0 .8rem}.counts a,.tabs a{text-decoration:none;padding:.15rem .3rem;border-radius:4px}
.counts a[aria-current],.tabs a[aria-current]{outline:2px solid #0b57d0}
details.filter-fold summary{cursor:pointer;font-size:.9rem;margin-bottom:.4rem}
@media (min-width:701px){details.filter-fold[open] summary{display:none}}
.filters{display:flex;flex-wrap:wrap;gap:.5rem .8rem;align-items:flex-end;margin-bottom:.8rem}.filters label{display:flex;flex-direction:column;font-size:.85rem}
table.rows{border-collapse:collapse;width:100%;background:#fff}
.rows td,.rows th{border-bottom:1px solid #e0e0e0;padding:.3rem .5rem;text-align:left;font-size:.9rem;vertical-align:top}.rows th{background:#f0f0f0}
.error{color:#b71c1c;overflow-wrap:anywhere}.rows td.error{max-width:26rem}.rows td.time{white-space:nowrap}.rows td.id{min-width:12rem;overflow-wrap:anywhere}.empty,.note{color:#555}.note{font-size:.85rem}
.pager{display:flex;gap:1.5rem;margin:.8rem 0}
.figures{display:grid;grid-template-columns:repeat(auto-fit,minmax(max(9rem,calc(25% - .45rem)),1fr));gap:.6rem;margin-bottom:1rem}
.figures div{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:.5rem .7rem;display:flex;flex-direction:column}
.figures strong{font-size:1.5rem}.figures div.warn{border:2px solid #e65100}.figures div.alert{border:2px solid #b71c1c;background:#fdecea}.figures div.alert strong,.figures div.alert .label{color:#b71c1c}.label{font-size:.85rem;color:#555}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,30rem),1fr));gap:1rem}
figure{margin:0;background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:.6rem}figcaption{font-weight:600;font-size:.95rem}
svg.chart{width:100%;height:auto;display:block}svg.chart text{font-size:14px;fill:#555}svg.chart .grid{stroke:#e0e0e0}
.legend{display:flex;flex-wrap:wrap;gap:.2rem .8rem;list-style:none;padding:0;margin:.3rem 0 0;font-size:.85rem}
.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-.1rem;border-radius:2px}
dl.fields{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:.7rem}
dl.fields dt{color:#555}dl.fields dd{margin:0;overflow-wrap:anywhere}
.act{display:flex;flex-wrap:wrap;gap:.8rem;align-items:center;margin:.8rem 0}
details.payload{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:.5rem}
pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:.5rem 0 0;font-size:.85rem}
.s-active{background:#2e7d32}.s-paused{background:#b71c1c}
.paused{border:2px solid #b71c1c;background:#fdecea;border-radius:6px;padding:.2rem .8rem .6rem;margin-bottom:1rem}.paused h2{margin:.5rem 0;color:#b71c1c}
.sender{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:.5rem .7rem;margin-bottom:.5rem}.sender.paused{border:2px solid #b71c1c;background:#fff}
.sender p{margin:.3rem 0}.sender form{margin:.3rem 0 0}.sender .name{font-size:1.05rem}.pause-facts{overflow-wrap:anywhere}
.pause-form{display:flex;flex-wrap:wrap;gap:.4rem .8rem;align-items:center;margin-top:.3rem}.pause-form input{width:16rem}
.bulk{display:flex;flex-wrap:wrap;gap:.4rem .8rem;align-items:center;margin:0 0 .8rem}
.progress{white-space:nowrap}.progress progress{width:7rem;vertical-align:middle}.rows td.job-filter{overflow-wrap:anywhere;font-size:.85rem;min-width:10rem}.rows td.job-act{white-space:nowrap}
.s-done{background:#2e7d32}.s-queued,.s-running{background:#1565c0}.s-cancelled{background:#757575}.s-done_with_failures{background:#b35c00}
details.headers summary{cursor:pointer;font-size:.85rem}.rows td.detail{max-width:20rem;overflow-wrap:anywhere}.rows td.reason{white-space:nowrap;min-width:0}.rows td.headers-cell{max-width:32rem}
details.headers dl{display:grid;grid-template-columns:minmax(6rem,max-content) minmax(0,1fr);gap:0 .6rem;margin:.3rem 0 0;font-size:.8rem}details.headers dt{color:#555;overflow-wrap:anywhere}details.headers dd{margin:0;overflow-wrap:anywhere}
.d-healthy{background:#2e7d32}.d-open{background:#b71c1c}.d-half_open{background:#e65100}.d-paused{background:#616161}
.destination dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.1rem .8rem;margin:.3rem 0;font-size:.9rem}.destination dl.facts dt{color:#555}.destination dl.facts dd{margin:0;overflow-wrap:anywhere}
.sender.d-card-open{border:2px solid #b71c1c}.sender.d-card-half_open{border:2px solid #e65100}.sender.d-card-paused{border:2px solid #616161}
.rows tr[aria-current]{background:#eef3fd}.rows td.dest{font-weight:600}
#sign-in{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-end}#sign-in label{display:flex;flex-direction:column}
@media (max-width:700px){
  header{padding:.3rem .6rem;gap:.2rem .6rem}header .brand{display:none}header nav{gap:.55rem;font-size:.9rem;flex:1 1 0;min-width:0;overflow-x:auto;white-space:nowrap;overscroll-behavior-x:contain;background:linear-gradient(90deg,#fff 40%,#fff0) 0 0/2rem 100% no-repeat local,linear-gradient(270deg,#fff 40%,#fff0) 100% 0/2rem 100% no-repeat local,radial-gradient(farthest-side at 0 50%,#0008,#0000) 0 0/1rem 100% no-repeat scroll,radial-gradient(farthest-side at 100% 50%,#0008,#0000) 100% 0/1rem 100% no-repeat scroll,#fff}
  .session{margin-left:0;width:100%;gap:.25rem .6rem;font-size:.8rem}.session .date{display:none}.session #operator{width:7rem}
  .session button{padding:.1rem .5rem}
  main{padding:.5rem .6rem}h1{font-size:1.2rem;margin:.1rem 0 .4rem}
  .counts{gap:.15rem .5rem;margin:.1rem 0 .4rem;font-size:.85rem}
  .rows thead{position:absolute;left:-9999px}
  .rows tbody{display:block}
  .rows tr{display:grid;grid-template-columns:auto minmax(0,1fr) auto;gap:0 .6rem;border:1px solid #e0e0e0;border-radius:6px;margin-bottom:.35rem;padding:.25rem .5rem;background:#fff;font-size:.85rem}
  .rows td{display:block;border:0;padding:0;min-width:0;font-size:inherit}
  .rows td.id{grid-area:1/1/2/3;min-width:0;overflow-wrap:anywhere}.rows td.status-cell{grid-area:1/3}
  .rows td.provider{grid-area:2/1}.rows td.type{grid-area:2/2}.rows td.topic{grid-area:2/1/3/3}
  .rows.outcomes td.dest{grid-area:1/1/2/3}.rows.outcomes td.attempts{grid-area:2/1}.rows.outcomes td.error{grid-area:2/2/3/3}.rows.outcomes td.time{grid-area:2/3}
  .rows tr:has(td.destination) td.topic{grid-area:2/1}.rows td.destination{grid-area:2/2;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;color:#555}
  .rows td.time{grid-area:2/3;white-space:nowrap;color:#555}
  .rows td.provider,.rows td.type,.rows td.topic{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
  .rows td.attempts{grid-area:3/1;color:#555}.rows td.attempts::before{content:attr(data-label);margin-right:.3em}
  .rows td.error{grid-area:3/2/4/4;max-width:none;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
  .rows td.detail{grid-area:3/1/4/4;max-width:none;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}.rows td.headers-cell{grid-area:4/1/5/4;max-width:none}
  dl.fields{grid-template-columns:1fr}dl.fields dd{margin-bottom:.3rem}
  .bulk{margin:0 0 .4rem}.bulk .note{display:none}
  .rows.jobs tr{grid-template-columns:minmax(0,1fr) auto}
  .rows.jobs td.id{grid-area:1/1}.rows.jobs td.status-cell{grid-area:1/2}
  .rows.jobs td.type{grid-area:2/1}.rows.jobs td.time{grid-area:2/2}
  .rows.jobs td.job-progress{grid-area:3/1/4/3}.rows.jobs td.job-filter{grid-area:4/1/5/3;min-width:0}
  .rows.jobs td.provider{grid-area:5/1;white-space:normal}.rows.jobs td.job-act{grid-area:5/2}
  .rows.failures td.error{white-space:normal}
}`;

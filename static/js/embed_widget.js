// A widget page inside another site's iframe (templates/embed/widget.html): it tells the
// page around it how tall it is, so that the loader (/embed/v1/loader.js) sizes the
// iframe to fit. Only the height is sent: nothing of the run or the form.
"use strict";

(function () {
  if (window.parent === window) return; // opened on its own, not framed
  let sent = 0;
  function report() {
    const height = Math.ceil(document.documentElement.getBoundingClientRect().height);
    if (height === sent) return;
    sent = height;
    window.parent.postMessage({ type: "svc-embed:height", height: height }, "*");
  }
  if (window.ResizeObserver) new ResizeObserver(report).observe(document.documentElement);
  window.addEventListener("load", report);
  document.addEventListener("toggle", report, true); // <details> opened or closed
  report();
})();

// A widget page inside another site's iframe (templates/embed/widget.html): it tells the
// page around it how tall it is, so that the loader (/embed/v1/loader.js) sizes the
// iframe to fit. Only the height is sent: nothing of the run or the form.
"use strict";

(function () {
  if (window.parent === window) return; // opened on its own, not framed
  let sent = 0;
  function report() {
    // The body's own height: the root element is never shorter than the iframe, so it
    // would let the iframe grow but never shrink back (a narrower page, a closed <details>).
    const body = document.body.getBoundingClientRect();
    const height = Math.ceil(body.bottom + window.scrollY);
    if (height === sent) return;
    sent = height;
    window.parent.postMessage({ type: "svc-embed:height", height: height }, "*");
  }
  if (window.ResizeObserver) new ResizeObserver(report).observe(document.body);
  window.addEventListener("load", report);
  document.addEventListener("toggle", report, true); // <details> opened or closed
  report();
})();

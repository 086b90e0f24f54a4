/*! SVC widget loader v1. Add to a page:
 *   <div data-svc-embed="PUBLIC_ID" data-title="Tool name"></div>
 *   <script src="https://<this service>/embed/v1/loader.js" async></script>
 * Each such div gets an iframe showing that widget, sized to its content.
 */
(function () {
  "use strict";
  var script = document.currentScript;
  if (!script || !script.src) return;
  var origin = new URL(script.src).origin;
  var base = script.src.replace(/\/embed\/v1\/loader\.js(?:[?#].*)?$/, "");
  var frames = [];
  var ID = /^[A-Za-z0-9_-]{16,43}$/;

  function mount(holder) {
    if (holder.getAttribute("data-svc-embed-ready")) return;
    var id = holder.getAttribute("data-svc-embed") || "";
    if (!ID.test(id)) return;
    holder.setAttribute("data-svc-embed-ready", "1");
    var frame = document.createElement("iframe");
    frame.src = base + "/embed/" + id;
    frame.title = holder.getAttribute("data-title") || "Embedded tool";
    frame.setAttribute("allow", "clipboard-write");
    frame.setAttribute("referrerpolicy", "strict-origin-when-cross-origin");
    frame.style.border = "0";
    frame.style.width = "100%";
    frame.style.height = "520px";
    frame.style.display = "block";
    holder.appendChild(frame);
    frames.push(frame);
  }

  window.addEventListener("message", function (event) {
    // Only our own pages, and only the iframe the message came from, may resize it.
    if (event.origin !== origin) return;
    var data = event.data;
    if (!data || data.type !== "svc-embed:height") return;
    var height = Number(data.height);
    if (!isFinite(height)) return;
    for (var i = 0; i < frames.length; i++) {
      if (frames[i].contentWindow === event.source) {
        frames[i].style.height = Math.max(80, Math.min(Math.round(height), 10000)) + "px";
      }
    }
  });

  function mountAll() {
    var holders = document.querySelectorAll("[data-svc-embed]");
    for (var i = 0; i < holders.length; i++) mount(holders[i]);
  }
  mountAll();
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", mountAll);
  }
})();

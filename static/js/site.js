// The site's small behaviours; every page works without them (no inline script: the CSP
// allows scripts from this origin only).
"use strict";

document.addEventListener("click", (event) => {
  // A copy button copies the text of the element its data-copy names.
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.innerText).then(() => {
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  });
});

// --- catalogue pages ------------------------------------------------------------------
// The /tools/ filters (a form with data-drop-empty): htmx leaves empty fields out of the
// address it asks for and puts in the address bar, so a shared search reads /tools/?q=pdf
// rather than /tools/?q=pdf&category=&plan= (without JavaScript the form sends them all,
// which the page reads the same).
document.addEventListener("htmx:configRequest", (event) => {
  if (!event.detail.elt.matches("form[data-drop-empty]")) return;
  const params = event.detail.parameters;
  for (const name of Object.keys(params)) {
    if (params[name] === "") delete params[name];
  }
});

// After a run, the runner is swapped whole: give focus back to its Run button (the keyboard
// user keeps their place; the button was disabled during the request, so htmx's own focus
// keeping cannot).
document.addEventListener("htmx:afterSettle", (event) => {
  const config = event.detail.requestConfig;
  if (!config || !config.elt || config.elt.id !== "run-form") return;
  const button = document.getElementById("run-button");
  if (button && (document.activeElement === document.body || !document.activeElement)) {
    button.focus({ preventScroll: true });
  }
});

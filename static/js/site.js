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

// --- run pages --------------------------------------------------------------------------
// A run that has not ended: its page follows the run's events (the section #run-text names
// their address) and shows the text its model writes as it is written. Its status region
// is polled by htmx as without JavaScript; once the run ends (the stream says so, or a
// poll finds it), the region shows the output and the growing text goes away. Screen
// readers hear each paragraph once it is written, not each piece.
let endFollowing = null; // the run followed now: stops following it

function followRun(section) {
  if (!window.EventSource || section.dataset.following) return;
  section.dataset.following = "yes";
  const body = section.querySelector(".run-text-body");
  const said = section.querySelector("[data-said]");
  const source = new EventSource(section.dataset.events);
  let text = "";
  let saidCount = 0;

  const show = () => {
    const paragraphs = text.split(/\n\s*\n/);
    body.replaceChildren(...paragraphs.map((paragraph) => {
      const element = document.createElement("p");
      element.textContent = paragraph;
      return element;
    }));
    section.hidden = text.trim() === "";
    const written = paragraphs.length - 1; // the last one may still be being written
    if (written > saidCount) {
      said.textContent = paragraphs.slice(saidCount, written).join("\n\n");
      saidCount = written;
    }
  };
  const finish = () => {
    source.close();
    section.hidden = true;
    body.replaceChildren();
    if (endFollowing === finish) endFollowing = null;
  };
  if (endFollowing) endFollowing();
  endFollowing = finish;
  source.addEventListener("delta", (event) => {
    text += JSON.parse(event.data).text;
    show();
  });
  source.addEventListener("reset", () => {
    text = "";
    saidCount = 0;
    show();
  });
  const ended = () => {
    source.close();
    const status = document.getElementById("run-status");
    const address = status && status.getAttribute("hx-get");
    if (!address || !window.htmx) return finish();
    // The region as the run ended (its output, or why it failed) in place of the text.
    htmx.ajax("GET", address, {target: "#run-status", swap: "outerHTML"}).then(finish, finish);
  };
  source.addEventListener("done", ended);
  // A server's `error` event carries data; the browser's own (a lost connection) has none,
  // and EventSource reconnects by itself, from the last event it had.
  source.addEventListener("error", (event) => { if (event.data !== undefined) ended(); });
}

// A poll that found the run ended: its region came back without hx-get (htmx stops there).
document.addEventListener("htmx:afterSwap", () => {
  const status = document.getElementById("run-status");
  if (endFollowing && status && !status.hasAttribute("hx-get")) endFollowing();
});

const followRuns = (root) => {
  const selector = "#run-text[data-events]";
  if (root.matches && root.matches(selector)) followRun(root);
  root.querySelectorAll(selector).forEach(followRun);
};
document.addEventListener("DOMContentLoaded", () => followRuns(document));
document.addEventListener("htmx:load", (event) => followRuns(event.detail.elt));

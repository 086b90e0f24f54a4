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
// their address, data-events) and shows the text its model writes as it is written, a
// workflow run's per step. The page's status element (data-status names it) is polled by
// htmx as without JavaScript; once the run ends (the stream says so, or a poll finds it:
// the element comes back without hx-get), the page shows the output and the growing text
// goes away. Screen readers hear each paragraph once it is written, not each piece.
let endFollowing = null; // the run followed now: stops following it

function followRun(section) {
  if (!window.EventSource || section.dataset.following) return;
  section.dataset.following = "yes";
  const blocks = section.querySelector(".run-text-blocks");
  const said = section.querySelector("[data-said]");
  const texts = new Map(); // step ("" for a tool run) -> {text, said, element}
  const source = new EventSource(section.dataset.events);

  const block = (step) => {
    if (!texts.has(step)) {
      const element = document.createElement("div");
      element.className = "run-text-body";
      if (step) {
        const heading = document.createElement("h3");
        heading.textContent = step;
        blocks.append(heading);
      }
      blocks.append(element);
      texts.set(step, {text: "", said: 0, element});
    }
    return texts.get(step);
  };
  const show = (written) => {
    const paragraphs = written.text.split(/\n\s*\n/);
    written.element.replaceChildren(...paragraphs.map((paragraph) => {
      const element = document.createElement("p");
      element.textContent = paragraph;
      return element;
    }));
    section.hidden = [...texts.values()].every((one) => one.text.trim() === "");
    const done = paragraphs.length - 1; // the last one may still be being written
    if (done > written.said) {
      said.textContent = paragraphs.slice(written.said, done).join("\n\n");
      written.said = done;
    }
  };
  const finish = () => {
    source.close();
    section.hidden = true;
    blocks.replaceChildren();
    if (endFollowing === finish) endFollowing = null;
  };
  if (endFollowing) endFollowing();
  endFollowing = finish;

  source.addEventListener("delta", (event) => {
    const data = JSON.parse(event.data);
    const written = block(data.step || "");
    written.text += data.text;
    show(written);
  });
  source.addEventListener("reset", (event) => {
    const written = block(JSON.parse(event.data).step || "");
    written.text = "";
    written.said = 0;
    show(written);
  });
  source.addEventListener("step_ended", (event) => {
    const data = JSON.parse(event.data);
    const written = texts.get(data.step);
    if (written && written.text.trim()) { // its last paragraph is whole now
      said.textContent = written.text.split(/\n\s*\n/).slice(written.said).join("\n\n");
    }
  });
  const ended = () => {
    source.close();
    const status = document.getElementById(section.dataset.status);
    const address = status && status.getAttribute("hx-get");
    if (!address || !window.htmx) return finish();
    // The page as the run ended (its output, or why it failed) in place of the text.
    const target = "#" + section.dataset.status;
    htmx.ajax("GET", address, {target, swap: "outerHTML"}).then(finish, finish);
  };
  source.addEventListener("done", ended);
  // A server's `error` event carries data; the browser's own (a lost connection) has none,
  // and EventSource reconnects by itself, from the last event it had.
  source.addEventListener("error", (event) => { if (event.data !== undefined) ended(); });
}

document.addEventListener("htmx:afterSwap", () => {
  const section = document.getElementById("run-text");
  const status = section && document.getElementById(section.dataset.status);
  if (endFollowing && status && !status.hasAttribute("hx-get")) endFollowing();
});

const followRuns = (root) => {
  const selector = "#run-text[data-events]";
  if (root.matches && root.matches(selector)) followRun(root);
  root.querySelectorAll(selector).forEach(followRun);
};
document.addEventListener("DOMContentLoaded", () => followRuns(document));
document.addEventListener("htmx:load", (event) => followRuns(event.detail.elt));

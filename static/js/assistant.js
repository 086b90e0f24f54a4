// The site assistant: a question's answer streamed (server-sent events read with fetch)
// into the live region its form names (data-assistant="<region id>"), and thumbs up or
// down sent without leaving the page. Without JavaScript the form opens /assistant?q=...,
// which answers on a whole page, and the vote form posts as usual.
"use strict";

(() => {
  const streamUrl = (form, question) =>
    `${form.action.replace(/\/assistant$/, "/assistant/stream")}?q=${encodeURIComponent(question)}`;

  // One server-sent event: its name and its data lines joined.
  const parseEvent = (block) => {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    return { name, data: data.join("\n") };
  };

  const ask = async (form, region) => {
    const question = (new FormData(form).get("q") || "").toString().trim();
    if (!question) return;
    const heading = document.createElement("h2");
    heading.className = "assistant-question";
    heading.textContent = question;
    const status = document.createElement("p");
    status.className = "muted assistant-status";
    status.textContent = "Asking…";
    const body = document.createElement("div");
    body.className = "assistant-body";
    region.replaceChildren(heading, status, body);
    region.setAttribute("aria-busy", "true");
    const button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    const show = (event) => {
      if (event.name === "status") status.textContent = event.data;
      else if (event.name === "chunk" || event.name === "done" || event.name === "refused") {
        body.insertAdjacentHTML("beforeend", event.data);
      }
      if (event.name === "done" || event.name === "refused") status.remove();
    };
    try {
      const response = await fetch(streamUrl(form, question), {
        headers: { Accept: "text/event-stream" },
        credentials: "same-origin",
      });
      if (!response.body) throw new Error("no body");
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          show(parseEvent(buffer.slice(0, end)));
          buffer = buffer.slice(end + 2);
        }
      }
      if (buffer.trim()) show(parseEvent(buffer));
    } catch (error) {
      status.textContent = "The answer could not be loaded. ";
      const link = document.createElement("a");
      link.href = `${form.action}?q=${encodeURIComponent(question)}`;
      link.textContent = "Open it on its own page";
      status.append(link);
    } finally {
      region.removeAttribute("aria-busy");
      if (button) button.disabled = false;
    }
  };

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    if (form.matches("form[data-assistant]")) {
      const region = document.getElementById(form.dataset.assistant);
      if (!region || !window.fetch || !window.TextDecoder) return;
      event.preventDefault();
      if (form.hasAttribute("data-push-url")) {
        const question = new FormData(form).get("q") || "";
        history.replaceState(null, "", `${form.action}?q=${encodeURIComponent(question)}`);
      }
      ask(form, region);
    } else if (form.matches("form[data-assistant-vote]")) {
      event.preventDefault();
      const data = new FormData(form);
      if (event.submitter && event.submitter.name) {
        data.set(event.submitter.name, event.submitter.value);
      }
      fetch(form.action, {
        method: "POST",
        body: data,
        headers: { "X-Requested-With": "fetch" },
        credentials: "same-origin",
      })
        .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
        .then((html) => { form.outerHTML = html; })
        .catch(() => {
          // Post it the plain way (with the button's value, which submit() leaves out).
          if (event.submitter && event.submitter.name) {
            const field = document.createElement("input");
            field.type = "hidden";
            field.name = event.submitter.name;
            field.value = event.submitter.value;
            form.append(field);
          }
          form.submit();
        });
    }
  });
})();

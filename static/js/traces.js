/*
 * The trace page while its upload is parsed (no inline scripts): [data-parse-url] polls the
 * trace's API, updates the bar and the bytes read, and reloads the page once the trace is ready
 * or failed (the page then shows the trace, or why it was refused).
 */
(function () {
  "use strict";

  function percent(value) {
    return Math.round(100 * value) + "%";
  }

  function watch(section) {
    var url = section.dataset.parseUrl;
    var every = 1500;
    var bar = section.querySelector('[data-field="progress"]');
    var text = section.querySelector('[data-field="percent"]');
    var bytes = section.querySelector('[data-field="bytes"]');
    function poll() {
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (trace) {
          if (trace.status !== "parsing") { window.location.reload(); return; }
          var parse = trace.parse;
          if (bar) { bar.value = parse.fraction; bar.textContent = percent(parse.fraction); }
          if (text) text.textContent = percent(parse.fraction);
          if (bytes) {
            bytes.textContent = parse.bytes_read.toLocaleString("en-US") + " of " +
              parse.bytes_total.toLocaleString("en-US") + " bytes";
          }
          window.setTimeout(poll, every);
        })
        .catch(function () { window.setTimeout(poll, every * 3); });
    }
    window.setTimeout(poll, every);
  }

  function start() {
    document.querySelectorAll("[data-parse-url]").forEach(watch);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

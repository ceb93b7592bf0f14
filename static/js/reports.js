/*
 * Study and finance report pages (planner/reports), no inline scripts:
 * - [data-progress-url]: polls the study's progress JSON, updates each run's bar, status and
 *   message, and reloads the page once every run has finished (the comparison is then there);
 * - form[data-autosubmit]: a changed select submits its form, so the choice lands in the URL;
 * - [data-plotly-url] charts inside a <details>: fetched (once) and drawn when the section is
 *   opened, so a page carries and draws only the charts a reader looks at.
 */
(function () {
  "use strict";

  function percent(value) {
    return Math.round(100 * value) + "%";
  }

  function updateRun(section, run) {
    var row = section.querySelector('tr[data-run="' + run.id + '"]');
    if (!row) return;
    var bar = row.querySelector('[data-field="progress"]');
    var status = row.querySelector('[data-field="status"]');
    var text = row.querySelector('[data-field="percent"]');
    var error = row.querySelector('[data-field="error"]');
    if (bar) { bar.value = run.progress; bar.textContent = percent(run.progress); }
    if (text) text.textContent = percent(run.progress);
    if (status) { status.textContent = run.status; status.className = "status status-" + run.status; }
    if (error) {
      error.textContent = "";
      if (run.note) {  // its worker stopped answering: when the run will be retried
        var note = document.createElement("span");
        note.className = "notice";
        note.textContent = run.note + " ";
        error.appendChild(note);
      }
      if (run.error) {
        var span = document.createElement("span");
        span.className = "field-error";
        span.textContent = run.error;
        error.appendChild(span);
      }
    }
  }

  function watch(section) {
    var url = section.dataset.progressUrl;
    var every = 2000;
    function poll() {
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (data) {
          data.runs.forEach(function (run) { updateRun(section, run); });
          if (data.finished) window.location.reload();
          else window.setTimeout(poll, every);
        })
        .catch(function () { window.setTimeout(poll, every * 3); });
    }
    window.setTimeout(poll, every);
  }

  // One request per section URL, however many charts it holds; kept so a chart is never fetched twice.
  var sections = {};

  function sectionCharts(url) {
    if (!sections[url]) {
      sections[url] = fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .catch(function (error) { delete sections[url]; throw error; });
    }
    return sections[url];
  }

  function loadChart(element) {
    if (element.dataset.loading) return;
    element.dataset.loading = "yes";
    sectionCharts(element.dataset.plotlyUrl)
      .then(function (data) {
        var chart = data.charts[element.id];
        element.textContent = "";
        if (!chart || chart.empty) {
          var empty = document.createElement("p");
          empty.className = "empty";
          empty.textContent = element.dataset.empty || "Nothing to draw.";
          element.replaceWith(empty);
          return;
        }
        var source = document.createElement("script");
        source.type = "application/json";
        source.id = element.dataset.plotly;
        source.textContent = JSON.stringify(chart.figure);
        element.after(source);
        window.planner.drawCharts(element.parentNode);
      })
      .catch(function () {
        element.dataset.loading = "";
        element.textContent = "This chart could not be loaded: close and open the section to try again.";
      });
  }

  function loadOpen(details) {
    if (!details.open) return;
    details.querySelectorAll("[data-plotly-url]").forEach(function (element) {
      if (!element.closest("details:not([open])")) loadChart(element);
    });
  }

  function start() {
    document.querySelectorAll("details").forEach(function (details) {
      if (!details.querySelector("[data-plotly-url]")) return;
      details.addEventListener("toggle", function () { loadOpen(details); });
      loadOpen(details);
    });
    document.querySelectorAll("[data-progress-url]").forEach(watch);
    document.querySelectorAll("form[data-autosubmit]").forEach(function (form) {
      form.querySelectorAll("select").forEach(function (select) {
        select.addEventListener("change", function () { form.submit(); });
      });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

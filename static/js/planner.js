/*
 * The planner's page behaviour, one file, no inline scripts:
 * - draws every [data-plotly] element from the JSON <script> it names (figures built in
 *   planner/web/charts.py);
 * - sorts and filters tables marked [data-sortable] / [data-filter-for], keeping the state in
 *   the URL (?sort=<table>:<column>:<asc|desc>&q-<table>=<text>) so a view can be shared;
 * - confirms forms marked [data-confirm];
 * - refreshes elements marked [data-refresh-url] (progress of running work) until done;
 * - previews an upload form marked [data-preview] in place, so the chosen file stays chosen.
 */
(function () {
  "use strict";

  var PLOT_CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  // On a narrow screen a chart keeps its words: a long title wraps onto several lines, a legend
  // beside the plot moves below it, and the margins shrink, so nothing is clipped at 390 px.
  function wrapWords(text, width) {
    if (!text || text.indexOf("<br>") !== -1 || text.length <= width) return text;
    var lines = [], line = "";
    text.split(" ").forEach(function (word) {
      if (line && (line + " " + word).length > width) { lines.push(line); line = word; }
      else { line = line ? line + " " + word : word; }
    });
    if (line) lines.push(line);
    return lines.join("<br>");
  }

  function fitNarrow(layout, width) {
    if (width >= 640) return layout;
    var chars = Math.max(24, Math.floor(width / 8.5));
    if (layout.title && layout.title.text) {
      layout.title.text = wrapWords(layout.title.text, chars);
      var titleLines = layout.title.text.split("<br>").length;
      layout.margin = layout.margin || {};
      layout.margin.t = Math.max(layout.margin.t || 0, 24 + 20 * titleLines);
    }
    layout.margin = layout.margin || {};
    layout.margin.l = Math.min(layout.margin.l || 64, 48);
    layout.margin.r = Math.min(layout.margin.r || 16, 8);
    if (layout.legend && layout.legend.orientation === "v") {
      layout.legend = { orientation: "h", x: 0, xanchor: "left", y: -0.25, yanchor: "top", font: { size: 10 } };
      layout.height = (layout.height || 340) + Math.min(260, 18 * Math.ceil((layout._entries || 6) / 2));
    }
    ["xaxis", "yaxis"].forEach(function (axis) {
      if (layout[axis] && layout[axis].title && layout[axis].title.text) {
        layout[axis].title.text = wrapWords(layout[axis].title.text, chars);
      }
    });
    return layout;
  }

  // A legend above the plot that wraps onto more rows than the top margin holds grows up into
  // the title: push the plot (and its legend) down by the overlap, so no title sits under a legend.
  function clearTitle(element, pass) {
    pass = pass || 0;
    var title = element.querySelector(".gtitle"), legend = element.querySelector(".legend");
    if (!title || !legend || pass >= 3) return element;
    var t = title.getBoundingClientRect(), l = legend.getBoundingClientRect();
    var apart = l.left >= t.right || l.right <= t.left || l.top >= t.bottom || l.bottom <= t.top;
    if (apart) return element;
    var update = { "margin.t": (element._fullLayout.margin.t || 0) + (t.bottom - l.top) + 6 };
    if (pass === 0) {
      // The title is pinned to the top of the chart (by default it sits in the middle of the top
      // margin, and would move down with it); the next pass measures again.
      var height = element._fullLayout.height || element.clientHeight || 400;
      update["title.yref"] = "container";
      update["title.y"] = 1 - 6 / height;
      update["title.yanchor"] = "top";
    }
    return Plotly.relayout(element, update).then(function () { return clearTitle(element, pass + 1); });
  }

  // Plotly (4.8 MB) is fetched only by a page that has a chart to draw, once: the page names its
  // address (<meta name="planner-plotly">, base.html), so pages without charts never load it.
  var plotlyReady = null;

  function withPlotly(then) {
    if (typeof Plotly !== "undefined") { then(); return; }
    if (!plotlyReady) {
      var meta = document.querySelector('meta[name="planner-plotly"]');
      plotlyReady = new Promise(function (resolve, reject) {
        if (!meta) { reject(new Error("no Plotly address")); return; }
        var script = document.createElement("script");
        script.src = meta.content;
        script.onload = resolve;
        script.onerror = function () { plotlyReady = null; reject(new Error("Plotly did not load")); };
        document.head.appendChild(script);
      });
    }
    plotlyReady.then(then, function () {});
  }

  function drawChart(element) {
    var source = document.getElementById(element.dataset.plotly);
    var figure = JSON.parse(source.textContent);
    figure.layout._entries = figure.data.filter(function (t) { return t.showlegend !== false; }).length;
    fitNarrow(figure.layout, element.clientWidth || window.innerWidth);
    delete figure.layout._entries;
    Plotly.newPlot(element, figure.data, figure.layout, PLOT_CONFIG).then(function (gd) { return clearTitle(gd); }).then(function () {
      element.dataset.drawn = "yes";
    });
  }

  function drawCharts(root) {
    var waiting = Array.prototype.filter.call((root || document).querySelectorAll("[data-plotly]"), function (element) {
      // A folded chart's figure (reports.js) is in the page only once its section was opened.
      return !element.dataset.drawn && document.getElementById(element.dataset.plotly);
    });
    if (!waiting.length) return;
    waiting.forEach(function (element) { element.dataset.drawn = "waiting"; });
    withPlotly(function () { waiting.forEach(drawChart); });
  }

  // -- tables ------------------------------------------------------------------------------

  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) return "";
    var raw = cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent.trim();
    var number = parseFloat(raw.replace(/,/g, ""));
    return raw !== "" && !isNaN(number) && /^[-+]?[\d,.]+(e[-+]?\d+)?\s*%?$/i.test(raw.replace(/\s/g, "")) ? number : raw.toLowerCase();
  }

  function sortTable(table, index, direction) {
    var body = table.tBodies[0];
    if (!body) return;
    var rows = Array.prototype.slice.call(body.rows).filter(function (row) { return !row.classList.contains("no-sort"); });
    rows.sort(function (a, b) {
      var x = cellValue(a, index), y = cellValue(b, index);
      if (typeof x === "number" && typeof y === "number") return direction === "asc" ? x - y : y - x;
      return direction === "asc" ? String(x).localeCompare(String(y)) : String(y).localeCompare(String(x));
    });
    rows.forEach(function (row) { body.appendChild(row); });
    table.querySelectorAll("thead th").forEach(function (th, i) {
      th.setAttribute("aria-sort", i === index ? (direction === "asc" ? "ascending" : "descending") : "none");
    });
  }

  function setQuery(key, value) {
    var url = new URL(window.location.href);
    if (value) url.searchParams.set(key, value); else url.searchParams.delete(key);
    window.history.replaceState(null, "", url.toString());
  }

  function setupSortable(table) {
    var name = table.dataset.sortable;
    var headers = table.querySelectorAll("thead th");
    headers.forEach(function (th, index) {
      if (th.dataset.nosort !== undefined) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort-button";
      while (th.firstChild) button.appendChild(th.firstChild);
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () {
        var direction = th.getAttribute("aria-sort") === "ascending" ? "desc" : "asc";
        sortTable(table, index, direction);
        setQuery("sort", name + ":" + index + ":" + direction);
      });
    });
    var state = new URL(window.location.href).searchParams.get("sort");
    if (state) {
      var parts = state.split(":");
      if (parts[0] === name && headers[parseInt(parts[1], 10)]) sortTable(table, parseInt(parts[1], 10), parts[2] === "desc" ? "desc" : "asc");
    }
  }

  function setupFilter(input) {
    var key = "q-" + input.dataset.filterFor;
    // Several <tbody> group rows (a study and its runs): filter whole groups, else single rows.
    // The table is looked up each time: a refreshed page part brings a new one.
    function apply() {
      var table = document.getElementById(input.dataset.filterFor);
      if (!table) return;
      var groups = table.tBodies.length > 1 ? Array.prototype.slice.call(table.tBodies)
        : Array.prototype.slice.call(table.tBodies[0] ? table.tBodies[0].rows : []);
      var text = input.value.trim().toLowerCase();
      groups.forEach(function (group) {
        group.hidden = text !== "" && group.textContent.toLowerCase().indexOf(text) === -1;
      });
    }
    if (input.dataset.filterReady === "yes") { apply(); return; }
    input.dataset.filterReady = "yes";
    input.value = new URL(window.location.href).searchParams.get(key) || "";
    apply();
    input.addEventListener("input", function () { apply(); setQuery(key, input.value.trim()); });
  }

  // -- work in progress ----------------------------------------------------------------------

  function watchProgress(element) {
    var url = element.dataset.refreshUrl;
    var every = parseInt(element.dataset.refreshSeconds || "3", 10) * 1000;
    function poll() {
      fetch(url, { headers: { "X-Requested-With": "fetch" }, credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
        .then(function (html) {
          var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(element.id);
          if (!fresh) return;
          fresh = document.adoptNode(fresh);
          element.replaceWith(fresh);
          element = fresh;
          enhance(fresh);
          document.querySelectorAll("input[data-filter-for]").forEach(setupFilter);  // filter the new rows
          if (fresh.dataset.refreshUrl) window.setTimeout(poll, every);
        })
        .catch(function () { window.setTimeout(poll, every * 3); });
    }
    window.setTimeout(poll, every);
  }

  // -- upload preview ------------------------------------------------------------------------

  function setupPreview(form) {
    var target = document.getElementById(form.dataset.preview);
    form.addEventListener("submit", function (event) {
      var submitter = event.submitter;
      if (submitter && submitter.value !== "preview") {
        var busy = document.getElementById("upload-busy");
        if (busy) busy.hidden = false;
        return;
      }
      if (!target || !submitter) return;
      event.preventDefault();
      var body = new FormData(form);
      body.set("action", "preview");
      target.setAttribute("aria-busy", "true");
      // form.action would be the buttons named "action": read the attribute
      fetch(form.getAttribute("action") || window.location.pathname, { method: "POST", body: body, credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (response) { return response.text(); })
        .then(function (html) {
          var page = new DOMParser().parseFromString(html, "text/html");
          page.querySelectorAll("[data-errors-for]").forEach(function (fresh) {
            var name = fresh.dataset.errorsFor;
            var current = form.querySelector('[data-errors-for="' + name + '"]');
            if (current) current.innerHTML = fresh.innerHTML;
            var input = form.querySelector('[name="' + name + '"]');
            if (input) {
              if (fresh.textContent.trim()) input.setAttribute("aria-invalid", "true");
              else input.removeAttribute("aria-invalid");
            }
          });
          var section = page.getElementById(form.dataset.preview);
          target.innerHTML = section ? section.innerHTML : "";
          target.removeAttribute("aria-busy");
        })
        .catch(function () {
          target.textContent = "The preview could not be loaded: check the connection and try again.";
          target.removeAttribute("aria-busy");
        });
    });
  }

  // Everything a page part needs once it is in the document (the page, or a refreshed part).
  function enhance(root) {
    drawCharts(root);
    root.querySelectorAll("table[data-sortable]").forEach(setupSortable);
    root.querySelectorAll("input[data-filter-for]").forEach(setupFilter);
    root.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.dataset.confirm)) event.preventDefault();
      });
    });
    root.querySelectorAll("form[data-preview]").forEach(setupPreview);
  }

  function start() {
    enhance(document);
    document.querySelectorAll("[data-refresh-url]").forEach(function (element) {
      if (element.id) watchProgress(element);
    });
  }

  // The menu's dropdowns (<details data-menu>) open without script; this only makes them behave
  // like menus: one open at a time, closed by Escape (focus back on its summary) or a click
  // elsewhere.
  function setupMenus() {
    var menus = Array.prototype.slice.call(document.querySelectorAll("details[data-menu]"));
    menus.forEach(function (menu) {
      menu.addEventListener("toggle", function () {
        if (!menu.open) return;
        menus.forEach(function (other) { if (other !== menu) other.open = false; });
      });
      menu.addEventListener("keydown", function (event) {
        if (event.key === "Escape" && menu.open) {
          menu.open = false;
          menu.querySelector("summary").focus();
        }
      });
    });
    document.addEventListener("click", function (event) {
      menus.forEach(function (menu) { if (menu.open && !menu.contains(event.target)) menu.open = false; });
    });
  }

  window.planner = { drawCharts: drawCharts, enhance: enhance };
  setupMenus();
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();

  // The new-study form offers only the policies that fit the chosen trace: choosing another trace
  // reloads the form for it (the name typed so far kept).
  document.querySelectorAll("form[data-trace-reload]").forEach(function (form) {
    var select = form.querySelector("select[name=trace]");
    if (!select) return;
    select.addEventListener("change", function () {
      var url = new URL(window.location.href);
      url.searchParams.set("trace", select.value);
      var name = form.querySelector("input[name=name]");
      if (name && name.value) url.searchParams.set("name", name.value); else url.searchParams.delete("name");
      window.location.assign(url.toString());
    });
  });
})();

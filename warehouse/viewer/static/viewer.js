// The response warehouse viewer: sorting a file's list, token values, hover read-outs, stepping through spans.
// Data is only ever written with textContent: nothing from the warehouse becomes markup here.
"use strict";
(function () {
  function sortable(table) {
    var heads = table.querySelectorAll("th[data-col]");
    heads.forEach(function (th) {
      var button = th.querySelector("button.sort");
      if (!button) return;
      button.addEventListener("click", function () {
        var col = Number(th.dataset.col), numeric = th.dataset.numeric === "true";
        var descending = th.dataset.dir !== "desc";
        heads.forEach(function (h) { delete h.dataset.dir; h.classList.remove("active"); });
        th.dataset.dir = descending ? "desc" : "asc";
        th.classList.add("active");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].textContent.trim(), y = b.cells[col].textContent.trim();
          if (x === "" || y === "") return x === y ? 0 : (x === "" ? 1 : -1);
          var c = numeric ? Number(x.split(",")[0]) - Number(y.split(",")[0]) : x.localeCompare(y);
          return descending ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }

  function colour(v, top) {
    if (v === null || v === undefined) return "";
    var t = Math.max(-1, Math.min(1, v / (top || 1)));
    var fade = Math.round(255 * (1 - 0.7 * Math.abs(t)));  // never so dark that the token cannot be read
    return t >= 0 ? "rgb(255," + fade + "," + fade + ")" : "rgb(" + fade + "," + fade + ",255)";
  }

  function tokens(section) {
    var readout = section.querySelector(".readout");
    var blob = section.querySelector("script.token-values");
    var data = blob ? JSON.parse(blob.textContent) : { vectors: [] };
    var pick = section.querySelector("select.vector-pick");
    var tok = function (segment, i) { return section.querySelector('.tok[data-s="' + segment[0] + '"][data-i="' + i + '"]'); };
    var say = function (text) { if (readout) readout.textContent = text; };
    var valueText = function (segment, i) {
      return data.vectors.map(function (v) {
        var x = (v[segment] || [])[i];
        return v.label + " = " + (x === null || x === undefined ? "–" : Number(x).toPrecision(4));
      }).join("  |  ");
    };
    var highlighted = null;
    var highlight = function (el) {
      if (highlighted) highlighted.classList.remove("hl");
      highlighted = el;
      if (el) el.classList.add("hl");
    };
    if (pick) {
      pick.addEventListener("change", function () {
        var v = pick.value === "" ? null : data.vectors[Number(pick.value)];
        ["prompt", "response"].forEach(function (segment) {
          var values = v ? (v[segment] || []) : [];
          var top = Math.max.apply(null, values.map(function (x) { return Math.abs(x || 0); }).concat([1e-12]));
          section.querySelectorAll('.tok[data-s="' + segment[0] + '"]').forEach(function (el) {
            el.style.backgroundColor = v ? colour(values[Number(el.dataset.i)], top) : "";
          });
        });
      });
    }
    section.querySelectorAll(".token-text").forEach(function (box) {
      box.addEventListener("mouseover", function (e) {
        var el = e.target.closest(".tok");
        if (!el) return;
        var segment = el.dataset.s === "p" ? "prompt" : "response";
        say(el.title + ": " + JSON.stringify(el.textContent) + (data.vectors.length ? "  " + valueText(segment, Number(el.dataset.i)) : ""));
      });
    });
    section.querySelectorAll("svg.heat").forEach(function (svg) {
      svg.addEventListener("mousemove", function (e) {
        var box = svg.getBoundingClientRect();
        var i = Math.floor((e.clientX - box.left) / Number(svg.dataset.cell));
        var segment = svg.dataset.segment, el = tok(segment, i);
        highlight(el);
        say(segment + " token " + i + (el ? " " + JSON.stringify(el.textContent) : "") + "  " + valueText(segment, i));
      });
    });
    section.querySelectorAll("svg.traj").forEach(function (svg) {
      var cursor = svg.querySelector("line.cursor");
      var n = Number(svg.dataset.n);
      svg.addEventListener("mousemove", function (e) {
        var box = svg.getBoundingClientRect();
        var i = Math.max(0, Math.min(n - 1, Math.round((e.clientX - box.left) / box.width * (n - 1))));
        var x = String(i * svg.viewBox.baseVal.width / Math.max(n - 1, 1));
        cursor.setAttribute("x1", x); cursor.setAttribute("x2", x); cursor.setAttribute("visibility", "visible");
        var el = tok("response", i);
        highlight(el);
        say("response token " + i + (el ? " " + JSON.stringify(el.textContent) : "") + "  " + valueText("response", i));
      });
    });
  }

  function stepping() {
    document.addEventListener("keydown", function (e) {
      if (e.key !== "j" && e.key !== "k") return;
      if (e.target.closest && e.target.closest("input, select, textarea")) return;
      var page = document.querySelector("main > .page:target") || document;
      var steps = Array.prototype.slice.call(page.querySelectorAll(".spans .step")).filter(function (s) { return s.offsetParent !== null; });
      if (!steps.length) return;
      var at = steps.indexOf(document.activeElement);
      var next = e.key === "j" ? Math.min(steps.length - 1, at + 1) : Math.max(0, at < 0 ? 0 : at - 1);
      steps[next].focus();
      steps[next].scrollIntoView({ block: "center" });
    });
  }

  // Links inside the file are fragments (#/responses/ID). In a notebook the file is an iframe's srcdoc,
  // whose links resolve against the notebook's address: follow them as fragments of this document.
  function route() {
    var id = decodeURIComponent(location.hash.slice(1)) || "/";
    var target = document.getElementById(id);
    if (!target || !target.classList.contains("page")) target = document.querySelector("main > .page.home");
    document.querySelectorAll("main > .page.shown").forEach(function (p) { p.classList.remove("shown"); });
    if (target) target.classList.add("shown");
    document.body.classList.add("routed");
  }

  function fragments() {
    if (!document.body.classList.contains("file")) return;
    route();
    window.addEventListener("hashchange", route);
    document.addEventListener("click", function (e) {
      var a = e.target.closest && e.target.closest('a[href^="#"]');
      if (!a || !document.body.classList.contains("file")) return;
      e.preventDefault();
      location.hash = a.getAttribute("href").slice(1);
      route();  // (a srcdoc frame may not tell hashchange)
      window.scrollTo(0, 0);
    });
  }

  function start() {
    fragments();
    document.querySelectorAll("table.sortable").forEach(sortable);
    document.querySelectorAll("section.tokens").forEach(tokens);
    stepping();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();

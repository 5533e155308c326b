
(function () {
  "use strict";
  var root = document.getElementById("case-browser");
  if (!root) { return; }
  var data = JSON.parse(document.getElementById("case-data").textContent);
  // Rows to objects, as eval_assets.report.case_browser.decode_case_data does.
  function record(fields, row, interned) {
    var out = {};
    fields.forEach(function (f, i) { out[f] = i < row.length ? row[i] : null; });
    Object.keys(interned).forEach(function (f) {
      if (out[f] !== null) { out[f] = data[interned[f]][out[f]]; }
    });
    return out;
  }
  data.cases = data.cases.map(function (row) {
    var c = record(data.case_fields, row, data.case_interned);
    c.frame_key = c.recording + "#" + c.frame;
    c.answers = (c.answers || []).map(function (r) {
      var a = record(data.answer_fields, r, data.answer_interned);
      a.cut = a.cut || 0;
      if (a.judge !== null) {
        a.judge = record(data.judge_fields, a.judge, {});
        a.judge.reasoning = a.judge.reasoning || "";
      }
      return a;
    });
    return c;
  });
  var frames = JSON.parse(document.getElementById("frame-data").textContent);
  var PAGE = data.page_size;
  var KEYS = ["model", "family", "recording", "outcome", "result", "blind", "sort"];
  var sel = {};
  KEYS.forEach(function (k) { sel[k] = document.getElementById("f-" + k); });
  var page = 0;
  var touched = false;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function answersOf(c) {
    var m = sel.model.value;
    return m ? c.answers.filter(function (a) { return a.model === m; }) : c.answers;
  }
  function matches(c) {
    if (sel.family.value && c.family !== sel.family.value) { return false; }
    if (sel.recording.value && c.recording !== sel.recording.value) { return false; }
    var b = sel.blind.value;
    if (b === "yes" && c.solvable !== true) { return false; }
    if (b === "no" && c.solvable !== false) { return false; }
    if (b === "unscored" && c.bias !== null) { return false; }
    var shown = answersOf(c);
    if (!shown.length) { return false; }
    var o = sel.outcome.value;
    if (o && !shown.some(function (a) { return a.status === o; })) { return false; }
    var r = sel.result.value;
    if (r === "right") { return shown.some(function (a) { return a.status === "correct"; }); }
    if (r === "wrong") {
      return shown.some(function (a) { return data.wrong.indexOf(a.status) >= 0; });
    }
    return true;
  }
  // Dataset order, or the bias score highest first (cases without one last, in dataset order).
  function ordered(list) {
    if (sel.sort.value !== "bias") { return list; }
    return list.map(function (c, i) { return [c, i]; }).sort(function (x, y) {
      var bx = x[0].bias === null ? -1 : x[0].bias;
      var by = y[0].bias === null ? -1 : y[0].bias;
      return by - bx || x[1] - y[1];
    }).map(function (p) { return p[0]; });
  }
  function answer(c, a) {
    var d = el("div", "answer");
    var who = el("div", "who");
    who.appendChild(el("b", null, a.model));
    who.appendChild(el("span", "badge b-" + a.status, data.labels[a.status] || a.status));
    var meta = [];
    if (c.kind === "vqa") {
      meta.push("extracted choice: " + (a.choice === null ? "none" : a.choice));
      if (a.tier) { meta.push("matched by: " + a.tier); }
    }
    if (a.latency !== null) { meta.push("latency " + a.latency.toFixed(2) + " s"); }
    who.appendChild(el("span", "meta", meta.join(" \u00b7 ")));
    d.appendChild(who);
    if (a.error) { d.appendChild(el("div", "meta", "error: " + a.error)); }
    if (a.raw === null) {
      d.appendChild(el("span", "meta", "(no reply)"));
    } else {
      var more = a.cut ? "\n\u2026 (" + a.cut + " more characters)" : "";
      d.appendChild(el("pre", null, a.raw + more));
    }
    if (a.judge) {
      var j = el("div", "judge");
      var by = a.judge.model ? " (" + a.judge.model + ")" : "";
      if (a.judge.score !== null) {
        j.appendChild(document.createTextNode("Judge" + by + ": "));
        j.appendChild(el("span", "score", a.judge.score + "/10"));
      } else {
        j.appendChild(document.createTextNode("Judge" + by + ": failed" +
          (a.judge.category ? " [" + a.judge.category + "]" : "") + ": " + (a.judge.error || "")));
      }
      if (a.judge.reasoning) { j.appendChild(el("div", null, a.judge.reasoning)); }
      d.appendChild(j);
    }
    return d;
  }
  function card(c) {
    var art = el("article", "case");
    art.setAttribute("data-case", c.id);
    var h = el("header");
    h.appendChild(el("code", null, c.id));
    h.appendChild(document.createTextNode(" \u00b7 recording "));
    h.appendChild(el("b", null, c.recording));
    h.appendChild(document.createTextNode(" \u00b7 frame " + c.frame + " \u00b7 "));
    h.appendChild(el("span", "chip", c.family.replace(/_/g, " ")));
    if (c.bias !== null) {
      var s = el("span", "chip bias", "bias score " + c.bias.toFixed(2));
      s.title = "the bias audit's out-of-fold score of a blind forest on this case " +
        "(1: a guess that sees no pixel gets it right)";
      h.appendChild(s);
    }
    if (c.solvable === true) { h.appendChild(el("span", "flag", "blind-solvable")); }
    art.appendChild(h);
    var body = el("div", "case-body");
    var fig = el("figure");
    var f = frames[c.frame_key];
    if (f) {
      var img = el("img");
      img.alt = "Frame " + c.frame + " with ground truth";
      img.loading = "lazy";
      img.width = f.w;
      img.height = f.h;
      img.src = f.src;
      img.title = "click: show the frame as the model saw it / with ground truth";
      var plain = false;
      var cap = el("figcaption", null, f.note);
      var toggle = el("button", "toggle", "show the frame as the model saw it");
      toggle.type = "button";
      var flip = function () {
        plain = !plain;
        img.src = plain ? f.plain : f.src;
        cap.textContent = plain ? "The frame as the model saw it (no ground truth drawn)."
          : f.note;
        toggle.textContent = plain ? "show the ground truth" : "show the frame as the model saw it";
      };
      img.addEventListener("click", flip);
      toggle.addEventListener("click", flip);
      fig.appendChild(img);
      fig.appendChild(cap);
      fig.appendChild(toggle);
    } else {
      fig.appendChild(el("p", "empty", "No overlay image for this frame."));
    }
    body.appendChild(fig);
    var info = el("div");
    info.appendChild(el("p", "question", c.question || "(prompt not recorded)"));
    if (c.objects.length) {
      info.appendChild(el("p", "objects", "About: " + c.objects.join(", ")));
    }
    if (c.kind === "vqa") {
      var ol = el("ol", "choices");
      ol.type = "A";
      c.choices.forEach(function (ch) {
        var li = el("li", ch === c.gold ? "gold" : null, ch);
        if (ch === c.gold) { li.appendChild(el("span", "gold-tag", "gold")); }
        ol.appendChild(li);
      });
      info.appendChild(ol);
      if (c.corrected) {
        // A human corrected the sensor's gold answer (an applied label override).
        var fix = el("p", "corrected", c.corrected.text);
        fix.title = "why: " + c.corrected.reason;
        info.appendChild(fix);
      }
    } else if (c.gold !== null) {
      var r = el("div", "reference");
      r.appendChild(el("b", null, "Reference: "));
      r.appendChild(document.createTextNode(c.gold));
      info.appendChild(r);
    }
    if (c.evidence) {
      var det = el("details");
      det.appendChild(el("summary", null, "Evidence behind the gold answer"));
      det.appendChild(el("pre", null, JSON.stringify(c.evidence, null, 1)));
      info.appendChild(det);
    }
    answersOf(c).forEach(function (a) { info.appendChild(answer(c, a)); });
    body.appendChild(info);
    art.appendChild(body);
    return art;
  }
  function writeHash() {
    if (!touched) { return; }
    var parts = [];
    KEYS.forEach(function (k) {
      if (sel[k].value) { parts.push(k + "=" + encodeURIComponent(sel[k].value)); }
    });
    if (page) { parts.push("page=" + (page + 1)); }
    var h = "#cases" + (parts.length ? "?" + parts.join("&") : "");
    if (location.hash !== h) {
      try { history.replaceState(null, "", h); } catch (e) { /* file: URLs may refuse */ }
    }
  }
  function readHash() {
    var h = location.hash;
    var i = h.indexOf("?");
    if (h.indexOf("#cases") !== 0 || i < 0) { return false; }
    var params = new URLSearchParams(h.slice(i + 1));
    KEYS.forEach(function (k) {
      var v = params.get(k);
      sel[k].value = "";
      if (v !== null) {
        for (var n = 0; n < sel[k].options.length; n++) {
          if (sel[k].options[n].value === v) { sel[k].value = v; }
        }
      }
    });
    var p = parseInt(params.get("page") || "1", 10);
    page = isNaN(p) ? 0 : p - 1;
    return true;
  }
  function render() {
    var list = ordered(data.cases.filter(matches));
    var pages = Math.max(1, Math.ceil(list.length / PAGE));
    page = Math.min(Math.max(page, 0), pages - 1);
    var out = document.getElementById("case-list");
    out.textContent = "";
    list.slice(page * PAGE, (page + 1) * PAGE).forEach(function (c) { out.appendChild(card(c)); });
    var first = list.length ? page * PAGE + 1 : 0;
    var last = Math.min(list.length, (page + 1) * PAGE);
    document.getElementById("case-count").textContent = list.length
      ? "Cases " + first + "\u2013" + last + " of " + list.length + " matching (" +
        data.cases.length + " in all)"
      : "No case matches these filters (" + data.cases.length + " in all).";
    root.setAttribute("data-matching", String(list.length));
    Array.prototype.forEach.call(root.querySelectorAll(".pager"), function (p) {
      p.querySelector("[data-step='-1']").disabled = page <= 0;
      p.querySelector("[data-step='1']").disabled = page >= pages - 1;
      p.querySelector(".page-info").textContent = "page " + (page + 1) + " of " + pages;
    });
    writeHash();
  }
  KEYS.forEach(function (k) {
    sel[k].addEventListener("change", function () { touched = true; page = 0; render(); });
  });
  Array.prototype.forEach.call(root.querySelectorAll(".pager button"), function (b) {
    b.addEventListener("click", function () {
      touched = true;
      page += parseInt(b.getAttribute("data-step"), 10);
      render();
      root.scrollIntoView();
    });
  });
  window.addEventListener("hashchange", function () {
    if (readHash()) { touched = true; render(); }
  });
  var preset = readHash();
  touched = preset;
  render();
  if (preset) { root.scrollIntoView(); }
}());

// The documents page filters its rows as the person types, with the rules
// the server applies without this script (internal/filter): tags of one
// category OR, categories AND, text in the title and tag names, deleted
// documents only in the deleted view. Every input of a frame is applied
// once, in that frame (requestAnimationFrame): only the rows whose
// visibility changes are touched, nothing is read from the layout, and
// the address bar follows a moment later, outside the frame.
"use strict";
(function () {
  var form = document.getElementById("filters");
  var body = document.getElementById("rows");
  if (!form || !body) { return; }
  var rows = Array.prototype.map.call(body.rows, function (tr) {
    return {
      el: tr,
      tags: tr.dataset.tags ? tr.dataset.tags.split(" ") : [],
      text: tr.dataset.text,
      deleted: tr.dataset.deleted === "true",
      shown: !tr.hidden
    };
  });
  var shown = document.getElementById("shown");
  function fold(s) { return s.normalize("NFC").toLowerCase().trim(); }
  function groups() {
    var g = {};
    form.querySelectorAll("input[name=tag]:checked").forEach(function (box) {
      (g[box.dataset.category] = g[box.dataset.category] || {})[box.value] = true;
    });
    return Object.keys(g).map(function (k) { return g[k]; });
  }
  function matches(r, gs, text, deleted) {
    if (r.deleted !== deleted) { return false; }
    for (var i = 0; i < gs.length; i++) {
      if (!r.tags.some(function (t) { return gs[i][t]; })) { return false; }
    }
    return text === "" || r.text.indexOf(text) !== -1;
  }
  var frame = 0, addressTimer = 0;
  function address() {
    var q = new URLSearchParams(new FormData(form)).toString();
    history.replaceState(null, "", q ? "?" + q : location.pathname);
  }
  function apply() {
    frame = 0;
    var gs = groups(), text = fold(form.q.value), deleted = form.deleted.checked, n = 0;
    var changed = [];
    rows.forEach(function (r) {
      var show = matches(r, gs, text, deleted);
      if (show) { n++; }
      if (r.shown !== show) { r.shown = show; changed.push(r); }
    });
    changed.forEach(function (r) { r.el.hidden = !r.shown; }); // writes only, after every read
    shown.textContent = n;
    clearTimeout(addressTimer);
    addressTimer = setTimeout(address, 250);
    document.dispatchEvent(new CustomEvent("console:filtered"));
  }
  function schedule() {
    if (!frame) { frame = requestAnimationFrame(apply); }
  }
  form.addEventListener("input", schedule);
  form.addEventListener("submit", function (e) { e.preventDefault(); schedule(); });
})();

// The edit page's live preview: the typed text goes to the console (which
// asks the API's preview, the sanitiser documents get) a moment after the
// person stops typing, and the sanitised HTML goes into the sandboxed
// frame. Without this script the Preview button does the same by a post.
// One request at most is in flight, and a key typed cancels it (its
// answer would be of an older text; a large Markdown text costs the API a
// second or more); a large text waits longer after the last key.
(function () {
  var content = document.getElementById("content");
  var frame = document.getElementById("preview");
  var form = content && content.form;
  if (!frame || !form || !form.dataset.preview) { return; }
  var status = document.getElementById("preview-status");
  var timer = 0, inFlight = null;
  var largeText = 100000, quickPause = 300, longPause = 1500; // characters, ms
  function show(answer, sent) {
    status.textContent = answer.error || "";
    if (!answer.error) {
      frame.srcdoc = answer.html;
      document.dispatchEvent(new CustomEvent("console:previewed", { detail: sent }));
    }
    document.dispatchEvent(new CustomEvent("console:preview-answered"));
  }
  function refused(code) {
    var why = {
      401: "your session has ended; sign in again in another tab (what you typed stays here).",
      403: "your role may not ask for it.",
      413: "the text is larger than the console accepts."
    }[code] || (code >= 500 ? "the library is not answering right now; it is asked again as you type." : "the answer was not understood (" + code + ").");
    return "The preview could not be made: " + why;
  }
  // answerOf is the answer as show takes it: the HTML, or an error in
  // words (never "undefined", whatever came back).
  function answerOf(r) {
    return r.json().catch(function () { return {}; }).then(function (a) {
      if (r.ok && a && typeof a.html === "string") { return { html: a.html }; }
      return { error: a && typeof a.error === "string" && a.error ? a.error : refused(r.status) };
    });
  }
  function cancel() {
    if (inFlight) { inFlight.abort(); inFlight = null; }
  }
  function update() {
    cancel();
    var ctl = new AbortController(), body = new FormData(), sent = content.value;
    inFlight = ctl;
    body.append("type", form.elements.type.value);
    body.append("content", sent);
    fetch(form.dataset.preview, { method: "POST", body: body, credentials: "same-origin", signal: ctl.signal })
      .then(answerOf)
      .catch(function () { return { error: "The preview could not be made: the console cannot be reached right now." }; })
      .then(function (a) {
        if (inFlight !== ctl) { return; } // cancelled: a newer text was sent
        inFlight = null;
        show(a, sent);
      });
  }
  content.addEventListener("input", function () {
    cancel(); // its answer would be of an older text
    clearTimeout(timer);
    timer = setTimeout(update, content.value.length > largeText ? longPause : quickPause);
  });
})();

// The media page's upload: files dropped on the zone join the file input,
// and the form is sent in the background with a progress bar; the page's
// answer (what became of each file) then replaces the page's content.
// Without this script the form is a plain multipart post.
(function () {
  function init() {
    var form = document.getElementById("upload-form");
    if (!form) { return; }
    var input = form.elements.files, zone = document.getElementById("dropzone");
    var bar = document.getElementById("upload-progress"), status = document.getElementById("upload-status");
    function named() {
      var names = Array.prototype.map.call(input.files, function (f) { return f.name; });
      document.getElementById("dropped").textContent = names.length ? "Chosen: " + names.join(", ") : "";
    }
    document.getElementById("drop-hint").hidden = false;
    zone.addEventListener("dragover", function (e) { e.preventDefault(); zone.classList.add("over"); });
    zone.addEventListener("dragleave", function () { zone.classList.remove("over"); });
    zone.addEventListener("drop", function (e) {
      e.preventDefault();
      zone.classList.remove("over");
      if (e.dataTransfer && e.dataTransfer.files.length) { input.files = joined(input.files, e.dataTransfer.files); named(); }
    });
    input.addEventListener("change", named);
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      send(form, bar, status);
    });
  }
  // joined is the files chosen before and those dropped, in one list.
  function joined(before, dropped) {
    var dt = new DataTransfer();
    Array.prototype.forEach.call(before, function (f) { dt.items.add(f); });
    Array.prototype.forEach.call(dropped, function (f) { dt.items.add(f); });
    return dt.files;
  }
  // progress moves the bar; the live region speaks only at the start and
  // the end, not at every step.
  function progress(bar, status, percent) {
    bar.value = percent;
    if (percent === 0) { status.textContent = "Uploading…"; }
    if (percent === 100) { status.textContent = "Sent; the library is storing the files…"; }
    document.dispatchEvent(new CustomEvent("console:upload-progress", { detail: percent }));
  }
  // refused says why the console did not take the upload, in
  // #upload-status; the form and the chosen files stay as they are.
  function refused(xhr, bar, status) {
    var page = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    var said = page.querySelector("#upload-results .field-error, main .error");
    var why = said ? said.textContent.trim() : {
      401: "Your session has ended: sign in again in another tab.",
      403: "Your role may not upload.",
      413: "The files are larger than the console accepts: send fewer, or smaller, at a time."
    }[xhr.status] || "The console could not take the upload (error " + xhr.status + ").";
    bar.hidden = true;
    status.textContent = why + " Nothing was stored by this send; the files are still chosen: send them again.";
    document.dispatchEvent(new CustomEvent("console:upload-refused"));
  }
  function send(form, bar, status) {
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action);
    xhr.upload.onprogress = function (e) {
      if (e.lengthComputable) { progress(bar, status, Math.floor(e.loaded * 100 / e.total)); }
    };
    xhr.upload.onload = function () { progress(bar, status, 100); };
    xhr.onload = function () {
      if (xhr.status < 200 || xhr.status > 299) { refused(xhr, bar, status); return; }
      var page = new DOMParser().parseFromString(xhr.responseText, "text/html");
      var main = page.querySelector("main");
      if (!main) { xhr.onerror(); return; }
      document.querySelector("main").replaceWith(main);
      document.title = page.title;
      init();
      // What became of each file is read out: focus moves to it (a
      // region inserted whole is not announced), and a summary goes to
      // the persistent live region.
      var results = document.getElementById("upload-results");
      if (results) { results.focus(); }
      var live = document.getElementById("upload-status");
      if (live && results) { live.textContent = results.textContent.replace(/\s+/g, " ").trim(); }
      document.dispatchEvent(new CustomEvent("console:uploaded"));
    };
    xhr.onerror = function () {
      bar.hidden = true;
      status.textContent = "The upload did not get through (the console cannot be reached); the files are still chosen: send them again.";
    };
    bar.hidden = false;
    progress(bar, status, 0);
    xhr.send(new FormData(form));
  }
  // A file dropped beside the zone must not make the browser leave the
  // page to show it.
  if (document.getElementById("upload-form")) {
    ["dragover", "drop"].forEach(function (type) {
      document.addEventListener(type, function (e) { e.preventDefault(); });
    });
  }
  init();
})();

// A form marked data-once (a restore) is sent once: pressing its button
// again while the page is leaving does nothing. The server refuses a
// second one anyway (If-Match); this spares the person its error page.
(function () {
  document.addEventListener("submit", function (e) {
    var f = e.target;
    if (!f.hasAttribute("data-once")) { return; }
    if (f.dataset.sent) { e.preventDefault(); return; }
    f.dataset.sent = "1";
  });
  window.addEventListener("pageshow", function () {
    document.querySelectorAll("form[data-once]").forEach(function (f) { delete f.dataset.sent; });
  });
})();

// Times: the editor's time zone goes with every form that has a tz field
// (a schedule is typed in it) and in a cookie (the pages print times in
// it); each <time> says how long ago in words, its exact time on hover in
// the browser's zone. Without this script, times are in UTC and say so.
(function () {
  var tz = "";
  try { tz = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (e) { tz = ""; }
  if (tz) {
    document.cookie = "tz=" + encodeURIComponent(tz) + "; path=/console; SameSite=Lax; max-age=31536000";
    document.querySelectorAll("input.tz").forEach(function (i) { i.value = tz; });
    document.querySelectorAll(".zone-name").forEach(function (s) { s.textContent = ": " + tz; });
  }
  var exact = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  var words = typeof Intl.RelativeTimeFormat === "function" ? new Intl.RelativeTimeFormat("en", { numeric: "auto" }) : null;
  function relative(t) {
    var s = (t - Date.now()) / 1000, a = Math.abs(s);
    if (!words) { return exact.format(t); }
    if (a < 60) { return "just now"; }
    if (a < 3600) { return words.format(Math.round(s / 60), "minute"); }
    if (a < 86400) { return words.format(Math.round(s / 3600), "hour"); }
    if (a < 30 * 86400) { return words.format(Math.round(s / 86400), "day"); }
    return exact.format(t);
  }
  function update() {
    document.querySelectorAll("time[datetime]").forEach(function (el) {
      var t = new Date(el.getAttribute("datetime"));
      if (isNaN(t)) { return; }
      el.title = exact.format(t) + (tz ? " (" + tz + ")" : "");
      el.textContent = relative(t);
    });
  }
  update();
  setInterval(update, 60000);
})();

// The filter panel is open on wide screens, closed on phones (where the
// first documents then fit on the first screen); without script it is
// closed unless a filter is on.
(function () {
  var panel = document.getElementById("filter-panel");
  if (panel && window.matchMedia("(min-width: 64rem)").matches) { panel.open = true; }
})();

// The documents list's bulk actions: a box in the header ticks every row
// shown (or none), and the bar says how many are ticked. Without this
// script each row's box is ticked by hand; the form is the same.
(function () {
  var bulk = document.getElementById("bulk");
  var all = document.getElementById("select-all");
  var said = document.getElementById("selected");
  var body = document.getElementById("rows");
  if (!bulk || !all || !body) { return; }
  function boxes() { return body.querySelectorAll("input[name=id]"); }
  function count() {
    var n = body.querySelectorAll("input[name=id]:checked").length;
    said.textContent = n === 0 ? "" : n === 1 ? "1 ticked" : n + " ticked";
  }
  all.hidden = false;
  all.addEventListener("change", function () {
    boxes().forEach(function (b) {
      if (!b.closest("tr").hidden) { b.checked = all.checked; }
    });
    count();
  });
  body.addEventListener("change", count);
  document.addEventListener("console:filtered", function () { all.checked = false; });
})();

// The picker of pinned related documents: with script the search asks the
// console as the person types (250 ms after the last key; Enter searches
// at once instead of saving the form), and a match ticked joins the pinned
// ones, so a later search never drops it. Without script, Find sends the
// form back with the matches (nothing saved).
(function () {
  var box = document.getElementById("related");
  var q = document.getElementById("relatedQ");
  var matches = document.getElementById("related-matches");
  var pinned = document.getElementById("related-pinned");
  if (!box || !q || !matches || !pinned || !box.dataset.search) { return; }
  var timer = 0, inFlight = null;
  function label(m) {
    var l = document.createElement("label");
    var c = document.createElement("input");
    c.type = "checkbox"; c.name = "related"; c.value = m.id;
    var s = document.createElement("span");
    s.dir = "auto"; s.textContent = m.title;
    l.append(c, " ", s);
    return l;
  }
  function search() {
    if (inFlight) { inFlight.abort(); }
    var text = q.value.trim();
    if (text === "") { matches.replaceChildren(); return; }
    var u = new URLSearchParams({ q: text, not: box.dataset.not || "" });
    pinned.querySelectorAll("input[name=related]:checked").forEach(function (c) { u.append("pinned", c.value); });
    inFlight = new AbortController();
    fetch(box.dataset.search + "?" + u.toString(), { signal: inFlight.signal, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (list) {
        if (list.length === 0) {
          var p = document.createElement("p");
          p.textContent = "No other document has a title holding “" + text + "”.";
          matches.replaceChildren(p);
        } else {
          matches.replaceChildren.apply(matches, list.map(label));
        }
        document.dispatchEvent(new CustomEvent("console:related-found"));
      })
      .catch(function (e) {
        if (e && e.name === "AbortError") { return; }
        var p = document.createElement("p");
        p.textContent = "The search could not be made now; press Find to try again.";
        matches.replaceChildren(p);
      });
  }
  q.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(search, 250); });
  q.addEventListener("keydown", function (e) {
    if (e.key === "Enter") { e.preventDefault(); clearTimeout(timer); search(); }
  });
  matches.addEventListener("change", function (e) {
    var c = e.target;
    if (c.name !== "related" || !c.checked) { return; }
    var hint = pinned.querySelector("p.hint");
    if (hint) { hint.remove(); }
    pinned.appendChild(c.closest("label"));
  });
})();

// Keyboard shortcuts (listed on the help page): / searches the documents,
// n opens a new document, ? the help page, Ctrl+S (⌘+S) saves the edit
// form as its main button does, Esc leaves the search field. Keys typed in
// a field are the field's, except Ctrl+S.
(function () {
  function typing(el) {
    return el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  }
  document.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && !e.altKey && e.key.toLowerCase() === "s") {
      var title = document.getElementById("title");
      var form = title && title.form;
      if (form && !title.disabled) {
        e.preventDefault();
        form.requestSubmit();
      }
      return;
    }
    var q = document.getElementById("q");
    if (e.key === "Escape" && document.activeElement === q) { q.blur(); return; }
    if (e.ctrlKey || e.metaKey || e.altKey || typing(document.activeElement)) { return; }
    if (e.key === "/") {
      e.preventDefault();
      if (q) { q.focus(); q.select(); } else { location.href = "/console/#q"; }
    } else if (e.key === "n" && document.querySelector('a[aria-keyshortcuts="n"]')) {
      location.href = "/console/documents/new";
    } else if (e.key === "?") {
      location.href = "/console/help";
    }
  });
  if (location.hash === "#q") {
    var q = document.getElementById("q");
    if (q) { q.focus(); }
  }
})();

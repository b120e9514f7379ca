// kanban.js moves task cards by drag and drop. A drop posts the move with
// the version the card was drawn at; the card moves only when the server
// accepts it (then its version is the new one). A refused move (a stale
// version, a missing right) leaves the card where it was and shows why.
(function () {
  "use strict";
  function move(board, cardEl, status) {
    var body = new URLSearchParams();
    body.set("csrf", board.dataset.csrf);
    body.set("version", cardEl.dataset.version);
    body.set("status", status);
    var err = cardEl.querySelector(".card-error");
    cardEl.classList.add("moving");
    return fetch("/tasks/" + encodeURIComponent(cardEl.dataset.id) + "/move", {
      method: "POST", credentials: "same-origin", body: body,
      headers: { Accept: "application/json" }
    }).then(function (r) {
      return r.json().then(function (a) { return { ok: r.ok, a: a }; });
    }).then(function (res) {
      cardEl.classList.remove("moving");
      if (!res.ok) {
        err.textContent = res.a.error || "the move was refused";
        err.hidden = false;
        return;
      }
      err.hidden = true;
      cardEl.dataset.version = String(res.a.version);
      var v = cardEl.querySelector('input[name="version"]');
      if (v) { v.value = String(res.a.version); }
      var col = board.querySelector('.column[data-status="' + res.a.status + '"]');
      if (col) { col.appendChild(cardEl); }
      board.querySelectorAll(".column").forEach(function (c) {
        c.querySelector(".count").textContent = String(c.querySelectorAll(".card").length);
      });
    }).catch(function (e) {
      cardEl.classList.remove("moving");
      err.textContent = "the move failed: " + e;
      err.hidden = false;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var board = document.getElementById("board");
    if (!board) { return; }
    board.addEventListener("dragstart", function (ev) {
      var c = ev.target.closest(".card");
      if (c) { ev.dataTransfer.setData("text/plain", c.dataset.id); ev.dataTransfer.effectAllowed = "move"; }
    });
    board.querySelectorAll(".column").forEach(function (col) {
      col.addEventListener("dragover", function (ev) { ev.preventDefault(); ev.dataTransfer.dropEffect = "move"; });
      col.addEventListener("drop", function (ev) {
        ev.preventDefault();
        var id = ev.dataTransfer.getData("text/plain");
        var cardEl = document.getElementById("card-" + id);
        if (cardEl && cardEl.closest(".column") !== col) { move(board, cardEl, col.dataset.status); }
      });
    });
  });
})();

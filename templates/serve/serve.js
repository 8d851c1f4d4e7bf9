// gitflow-agents serve: the live part of the page. Every text goes in with textContent (never
// as HTML); the server sent it masked. No inline script: the page's Content-Security-Policy.
"use strict";

(function () {
  const body = document.body;
  const token = body.dataset.token;
  const page = body.dataset.page;
  const runId = body.dataset.run;
  const live = document.getElementById("live");
  const RUN_ID = /^[0-9A-Za-z-]{8,64}$/;
  const STATES = /^[a-z_]{1,32}$/;

  function withToken(path) {
    return path + "?token=" + encodeURIComponent(token);
  }

  function elapsed(started, ended) {
    let seconds = Math.max(0, Math.floor((ended || Date.now() / 1000) - started));
    const hours = Math.floor(seconds / 3600);
    const minutes = Math.floor((seconds % 3600) / 60);
    seconds = seconds % 60;
    const mm = String(minutes).padStart(2, "0");
    const ss = String(seconds).padStart(2, "0");
    return hours ? hours + ":" + mm + ":" + ss : mm + ":" + ss;
  }

  function tick() {
    document.querySelectorAll("[data-started]").forEach(function (cell) {
      const started = parseFloat(cell.dataset.started);
      const ended = cell.dataset.ended ? parseFloat(cell.dataset.ended) : 0;
      if (!isNaN(started)) {
        cell.textContent = elapsed(started, ended);
      }
    });
  }

  function setState(cell, state) {
    if (!state || !STATES.test(state)) {
      return;
    }
    cell.textContent = state;
    cell.className = cell.className.replace(/\bstate-\S+/g, "").trim() + " state-" + state;
  }

  function cell(row, name) {
    let found = row.querySelector("td." + name);
    if (!found) {
      found = document.createElement("td");
      found.className = name;
      row.appendChild(found);
    }
    return found;
  }

  function indexRow(view) {
    const table = document.querySelector("#runs tbody");
    if (!table || !RUN_ID.test(view.run)) {
      return null;
    }
    let row = table.querySelector('tr[data-run="' + view.run + '"]');
    if (!row) {
      row = document.createElement("tr");
      row.dataset.run = view.run;
      const link = document.createElement("a");
      link.href = withToken("/run/" + view.run);
      link.textContent = view.run.slice(0, 13);
      cell(row, "run").appendChild(link);
      cell(row, "flow").textContent = view.flow;
      ["agent", "what", "state", "elapsed", "tokens", "last"].forEach(function (name) {
        cell(row, name);
      });
      table.insertBefore(row, table.firstChild);
      const none = document.getElementById("no-runs");
      if (none) {
        none.remove();
      }
    }
    return row;
  }

  function seconds(at) {
    const parsed = Date.parse(at);
    return isNaN(parsed) ? null : parsed / 1000;
  }

  function startsOrEnds(time, view) {
    // A run's time counts from its first start: an attempt after a rate limit's wait
    // (agent:waiting, then agent:start again) goes on from it, as `status` counts it.
    const at = seconds(view.at);
    if (view.type === "agent:start" || view.type === "agent:waiting") {
      delete time.dataset.ended;
    }
    if (view.type === "agent:start" && at !== null && !time.dataset.started) {
      time.dataset.started = String(at);
    }
    if ((view.type === "agent:complete" || view.type === "agent:failed") && at !== null) {
      time.dataset.ended = String(at);
    }
    if (view.type === "run:lost" && typeof view.ended === "number") {
      time.dataset.ended = String(view.ended); // its last sign of life, as a reload times it
    }
  }

  function onIndexEvent(view) {
    const row = indexRow(view);
    if (!row) {
      return;
    }
    if (view.agent) {
      cell(row, "agent").textContent = view.agent;
    }
    if (view.what) {
      cell(row, "what").textContent = view.what;
    }
    setState(cell(row, "state"), view.state);
    startsOrEnds(cell(row, "elapsed"), view);
    if (view.tokens) {
      cell(row, "tokens").textContent = view.tokens;
    }
    if (view.text && (view.type === "agent:output" || view.type === "agent:tool")) {
      const lines = view.text.split("\n");
      cell(row, "last").textContent = lines[lines.length - 1];
    }
  }

  function showReason(text) {
    let reason = document.getElementById("reason");
    if (!reason) {
      const state = document.getElementById("state");
      const term = document.createElement("dt");
      term.textContent = "reason";
      reason = document.createElement("dd");
      reason.id = "reason";
      state.parentNode.insertBefore(reason, document.getElementById("tokens").nextSibling);
      state.parentNode.insertBefore(term, reason);
    }
    reason.textContent = text;
  }

  function onRunEvent(view) {
    const events = document.getElementById("events");
    if (view.run !== runId) {
      return;
    }
    if (view.type === "run:ended") {
      setState(document.getElementById("state"), view.state);
      if (view.tokens) {
        // what its record says it spent (every attempt; a lower bound marked), as a reload
        document.getElementById("tokens").textContent = view.tokens;
      }
      return;
    }
    if (view.type === "run:lost") {
      // its supervisor died: nothing will end it (no line of its events: no offset)
      setState(document.getElementById("state"), view.state);
      startsOrEnds(document.getElementById("elapsed"), view);
      showReason(view.text);
      return;
    }
    if (view.type === "run:spent") {
      // what the running agent has spent so far (no line of its events: no offset)
      if (view.tokens) {
        document.getElementById("tokens").textContent = view.tokens;
      }
      return;
    }
    if (view.offset <= parseInt(events.dataset.offset || "0", 10)) {
      return; // one the page was drawn with
    }
    events.dataset.offset = String(view.offset);
    setState(document.getElementById("state"), view.state);
    if (view.tokens) {
      document.getElementById("tokens").textContent = view.tokens;
    }
    startsOrEnds(document.getElementById("elapsed"), view);
    const item = document.createElement("li");
    const at = document.createElement("span");
    at.className = "at";
    at.textContent = view.at;
    const type = document.createElement("span");
    type.className = "type";
    type.textContent = view.type;
    item.append(at, " ", type, " ", view.text);
    events.appendChild(item);
    if (view.text && (view.type === "agent:output" || view.type === "agent:tool")) {
      const output = document.getElementById("output");
      const lines = (output.textContent + view.text + "\n").split("\n");
      output.textContent = lines.slice(-13).join("\n");
    }
  }

  function onNotice(notice) {
    if (page !== "run" || notice.run !== runId) {
      return;
    }
    const item = document.createElement("li");
    item.textContent = notice.text;
    document.getElementById("notices").appendChild(item);
  }

  function parse(message) {
    try {
      return JSON.parse(message.data);
    } catch (error) {
      return null;
    }
  }

  function planStates(root) {
    return Array.from(root.querySelectorAll("#plan-graph g[data-step]"))
      .map(function (node) {
        return node.getAttribute("data-step") + ":" + node.getAttribute("class");
      })
      .join(" ");
  }

  function recheckPlan() {
    // The stream starts from its end: a step that started or ended between this page's drawing
    // and the stream's (re)start sent its event to nobody. Ask for the page again and redraw if
    // a step's state differs (the answer is parsed inert: DOMParser runs no script).
    fetch(window.location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (answer) {
        return answer.ok ? answer.text() : "";
      })
      .then(function (text) {
        const fresh = text ? new DOMParser().parseFromString(text, "text/html") : null;
        if (fresh && planStates(fresh) !== planStates(document)) {
          window.location.reload();
        }
      })
      .catch(function () {});
  }

  function connect() {
    // the plan page only wants what happens from now on (it reloads on it)
    const source = new EventSource(withToken("/events") + (page === "plan" ? "&from=end" : ""));
    source.onopen = function () {
      live.textContent = "live";
      live.className = "live on";
      if (page === "plan") {
        recheckPlan();
      }
    };
    source.onerror = function () {
      live.textContent = "reconnecting…";
      live.className = "live off";
    };
    source.addEventListener("event", function (message) {
      const view = parse(message);
      if (!view) {
        return;
      }
      if (page === "index") {
        onIndexEvent(view);
      } else if (page === "run") {
        onRunEvent(view);
      } else if (page === "plan" && (view.type === "agent:start" || view.type === "run:ended")) {
        window.location.reload(); // a step started or ended: its colour may change
      } else if (page === "plan" && view.type === "run:lost") {
        // A step's `run` died (kill -9): its step may have stopped running. Redrawn only when a
        // step's state differs: each new stream says run:lost again of a run that stays lost.
        recheckPlan();
      }
    });
    source.addEventListener("notice", function (message) {
      const notice = parse(message);
      if (notice) {
        onNotice(notice);
      }
    });
  }

  if (page === "index" || page === "run" || page === "plan") {
    connect();
  } else {
    live.textContent = "";
  }
  tick();
  setInterval(tick, 1000);
})();

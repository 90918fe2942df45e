// The dashboard's page script: live updates through server-sent events (job counts, the
// throughput, the history chart's current minute, the page's content), the CSRF value of action
// forms, confirmations, and "select page" of the jobs list.
// Served as a file (the Content-Security-Policy allows no inline script).
(() => {
  const main = document.getElementById('main');
  const csrf = document.querySelector('meta[name="csrf"]')?.getAttribute('content') ?? '';
  let chart = null;
  let updates = 0;

  function fillCsrf(root) {
    for (const input of root.querySelectorAll('input[name="_csrf"]')) input.value = csrf;
  }

  function setText(selector, value) {
    for (const el of document.querySelectorAll(selector)) el.textContent = value;
  }

  function contentWidth(el) {
    const style = getComputedStyle(el);
    const padding = (Number.parseFloat(style.paddingLeft) || 0) + (Number.parseFloat(style.paddingRight) || 0);
    return (el.clientWidth || 800) - padding;
  }

  // A history chart (processed and failed runs per minute or per day, points [time s, processed, failed]).
  function historyChart(id, per) {
    const el = document.getElementById(id);
    if (!el || typeof uPlot === 'undefined') return null;
    const series = JSON.parse(el.getAttribute('data-series') || '[]');
    const data = [series.map((p) => p[0]), series.map((p) => p[1]), series.map((p) => p[2])];
    const made = new uPlot(
      {
        // (the card's content box: its padding is not the chart's, or the legend overflows it)
        width: Math.max(300, contentWidth(el)),
        height: 220,
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
        series: [
          {},
          { label: `processed/${per}`, stroke: '#1c9c5a', width: 2, points: { show: false } },
          { label: `failed/${per}`, stroke: '#d0453a', width: 2, points: { show: false } },
        ],
        axes: [{}, { label: `runs/${per}` }],
      },
      data,
      el,
    );
    made.rotaData = data;
    return made;
  }

  function initChart() {
    chart = historyChart('rate-chart', 'min');
    historyChart('day-chart', 'day');
  }

  // The current minute's point (the tick's `minute`): replaces the last one, or adds a minute.
  function addPoint(point) {
    if (!chart || !point) return;
    const d = chart.rotaData;
    const last = d[0].length - 1;
    if (last >= 0 && d[0][last] > point[0]) return;
    if (last >= 0 && d[0][last] === point[0]) {
      d[1][last] = point[1];
      d[2][last] = point[2];
      chart.setData(d);
      return;
    }
    d[0].push(point[0]);
    d[1].push(point[1]);
    d[2].push(point[2]);
    while (d[0].length && d[0][0] <= point[0] - 3600) {
      d[0].shift();
      d[1].shift();
      d[2].shift();
    }
    chart.setData(d);
  }

  // Adds a count for a state that has none on the page yet (a queue's first jobs, a new state).
  function addCount(state) {
    const header = document.querySelector('header .counts');
    if (header) {
      const span = document.createElement('span');
      span.className = `state state-${state}`;
      span.append(`${state} `);
      const b = document.createElement('b');
      b.dataset.count = state;
      span.append(b);
      header.append(span);
    }
    const cards = document.getElementById('state-cards');
    if (cards) {
      const a = document.createElement('a');
      a.className = `card state-${state}`;
      a.href = `${cards.dataset.jobs}?state=${encodeURIComponent(state)}`;
      const label = document.createElement('span');
      label.textContent = state;
      const b = document.createElement('b');
      b.dataset.count = state;
      a.append(label, b);
      cards.append(a);
    }
  }

  function onTick(t) {
    for (const [state, n] of Object.entries(t.counts)) {
      const selector = `[data-count="${CSS.escape(state)}"]`;
      if (!document.querySelector(`header ${selector}`)) addCount(state);
      setText(selector, n.toLocaleString('en-US'));
    }
    if (t.point) {
      setText('#rate-submitted', t.point[1].toFixed(1));
      setText('#rate-finished', t.point[2].toFixed(1));
    }
    addPoint(t.minute);
    setText('#executors', t.executors);
    setText('#slots', t.slots);
    if (t.memory) setText('#redis-memory', t.memory);
    if (t.ops) setText('#redis-ops', t.ops);
  }

  // Whether a form field of the page differs from what the page was rendered with.
  function touched() {
    for (const el of main.querySelectorAll('input, select')) {
      if (el instanceof HTMLSelectElement) {
        if (el.selectedOptions[0] && !el.selectedOptions[0].defaultSelected && el.selectedIndex !== 0) return true;
      } else if (el.type === 'checkbox' ? el.checked !== el.defaultChecked : el.value !== el.defaultValue) return true;
    }
    return false;
  }

  function onView(body) {
    // The overview follows the ticks; a page being typed into is left alone until it is left.
    if (document.getElementById('rate-chart')) return;
    if (main.contains(document.activeElement) && document.activeElement !== document.body) return;
    // (nor a page whose forms the operator changed: jobs selected, a bulk scope chosen, a field typed)
    if (touched()) return;
    main.innerHTML = body;
    fillCsrf(main);
    updates += 1;
    document.body.dataset.updates = String(updates);
  }

  function connect() {
    const url = document.body.getAttribute('data-live');
    if (!url || typeof EventSource === 'undefined') return;
    const status = document.getElementById('live-status');
    const source = new EventSource(url);
    source.addEventListener('open', () => {
      status?.classList.add('on');
      status?.classList.remove('off');
    });
    source.addEventListener('error', () => {
      status?.classList.add('off');
      status?.classList.remove('on');
    });
    source.addEventListener('tick', (e) => onTick(JSON.parse(e.data)));
    source.addEventListener('view', (e) => onView(JSON.parse(e.data)));
  }

  document.addEventListener('submit', (e) => {
    const form = e.target;
    const question = form instanceof HTMLFormElement ? form.getAttribute('data-confirm') : null;
    if (question && !window.confirm(question)) e.preventDefault();
  });

  // "select page" ticks every job of the list.
  document.addEventListener('change', (e) => {
    const box = e.target;
    if (!(box instanceof HTMLInputElement) || !box.hasAttribute('data-select-page')) return;
    for (const row of document.querySelectorAll('input[type="checkbox"][form="bulk"]')) row.checked = box.checked;
  });

  fillCsrf(document);
  initChart();
  connect();
})();

// The dashboard's page script: live updates through server-sent events (job counts, the
// throughput chart, the page's content), the CSRF value of action forms, and confirmations.
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

  function initChart() {
    const el = document.getElementById('rate-chart');
    if (!el || typeof uPlot === 'undefined') return;
    const series = JSON.parse(el.getAttribute('data-series') || '[]');
    const data = [series.map((p) => p[0]), series.map((p) => p[1]), series.map((p) => p[2])];
    chart = new uPlot(
      {
        // (the card's content box: its padding is not the chart's, or the legend overflows it)
        width: Math.max(300, contentWidth(el)),
        height: 220,
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
        series: [
          {},
          { label: 'submitted/s', stroke: '#2f6fdf', width: 2, points: { show: false } },
          { label: 'finished/s', stroke: '#1c9c5a', width: 2, points: { show: false } },
        ],
        axes: [{}, { label: 'jobs/s' }],
      },
      data,
      el,
    );
    chart.rotaData = data;
  }

  function addPoint(point) {
    if (!chart || !point) return;
    const d = chart.rotaData;
    if (d[0].length && d[0][d[0].length - 1] >= point[0]) return;
    d[0].push(point[0]);
    d[1].push(point[1]);
    d[2].push(point[2]);
    while (d[0].length && d[0][0] < point[0] - 900) {
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
      addPoint(t.point);
    }
    setText('#executors', t.executors);
    setText('#slots', t.slots);
    if (t.memory) setText('#redis-memory', t.memory);
    if (t.ops) setText('#redis-ops', t.ops);
  }

  function onView(body) {
    // The overview follows the ticks; a page being typed into is left alone until it is left.
    if (document.getElementById('rate-chart')) return;
    if (main.contains(document.activeElement) && document.activeElement !== document.body) return;
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

  fillCsrf(document);
  initChart();
  connect();
})();

// The string catalogues of the window's pages (index.html, capture.html): en.json and zh-CN.json next to
// them, in the kit's flat `{ "ui.key": "text with {param}" }` format. One copy for both pages, loaded by
// a <script> before each page's own; it sets `window.aiosCatalogue`. `?lang=pseudo` renders every string
// as ⟦…⟧ (the tests' check that no visible text bypasses the catalogue).
'use strict';
(() => {
  /** Where the tray page keeps the language chosen (same origin for both pages, so the same storage). */
  const LOCALE_KEY = 'aios-locale';
  const state = { locale: 'en', table: {}, en: {} };

  /** The locale: ?lang=…, else the one chosen before, else the browser's/OS's first language (Chinese → zh-CN, else en). */
  function pickLocale() {
    const asked = new URLSearchParams(location.search).get('lang');
    if (asked === 'en' || asked === 'zh-CN' || asked === 'pseudo') return asked;
    const saved = localStorage.getItem(LOCALE_KEY);
    if (saved === 'en' || saved === 'zh-CN') return saved;
    const tag = (navigator.languages && navigator.languages[0]) || navigator.language || 'en';
    return /^zh([-_]|$)/i.test(tag) ? 'zh-CN' : 'en';
  }

  async function fetchTable(name) {
    const res = await fetch(`${name}.json`, { cache: 'no-store', credentials: 'omit' });
    if (!res.ok) throw new Error(`catalogue ${name}: ${res.status}`);
    return res.json();
  }

  /** Loads `locale`'s catalogue (with en as the fallback of a missing key). */
  async function loadLocale(locale) {
    const en = await fetchTable('en');
    let table = en;
    if (locale === 'zh-CN') table = await fetchTable('zh-CN');
    if (locale === 'pseudo') table = Object.fromEntries(Object.entries(en).map(([k, v]) => [k, `⟦${v}⟧`]));
    Object.assign(state, { locale, table, en });
  }

  /** The sentence for `key` with `{param}`s filled; fallback en, then the key itself. */
  function t(key, params = {}) {
    const template = state.table[key] ?? state.en[key] ?? key;
    return template.replace(/\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name) => (Object.hasOwn(params, name) ? String(params[name]) : whole));
  }

  window.aiosCatalogue = {
    LOCALE_KEY,
    pickLocale,
    loadLocale,
    t,
    /** True when the en catalogue holds `key`. */
    has: (key) => Object.hasOwn(state.en, key),
    /** The locale loaded last. */
    get locale() {
      return state.locale;
    },
  };
})();

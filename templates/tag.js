/* Quoting visitor tracking. Sends nothing while the browser signals Global Privacy Control. */
(function (w, d, cfg) {
  'use strict';
  try {
    var STORE = 'quoting_visitor_id';
    var ID = /^[A-Za-z0-9_-]{1,64}$/;
    var TYPES = { page_view: 1, product_view: 1, add_to_cart: 1, search: 1, custom: 1 };
    var FIELDS = { url: 2048, title: 512, referrer: 2048, sku: 100, category: 200 };
    var memory = null;

    var silent = function () {
      try {
        return !cfg.key || w.navigator.globalPrivacyControl === true;
      } catch (e) {
        return true;
      }
    };

    var newId = function () {
      var bytes = new Uint8Array(16), id = '', i;
      try {
        w.crypto.getRandomValues(bytes);
      } catch (e) {
        for (i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
      }
      for (i = 0; i < 16; i++) id += (bytes[i] + 256).toString(16).slice(1);
      return id;
    };

    var visitorId = function () {
      if (silent()) return null;
      var id = memory;
      try {
        id = w.localStorage.getItem(STORE) || id;
      } catch (e) {}
      if (!id || !ID.test(id)) id = newId();
      if (id !== memory) {
        memory = id;
        try {
          w.localStorage.setItem(STORE, id);
        } catch (e) {}
      }
      return id;
    };

    var text = function (value, max) {
      return value == null ? null : String(value).slice(0, max);
    };

    var track = function (type, props) {
      try {
        if (silent() || typeof type !== 'string' || !type || typeof w.fetch !== 'function') return;
        var known = TYPES[type] === 1;
        var body = { visitor_id: visitorId(), type: known ? type : 'custom', occurred_at: new Date().toISOString() };
        body.url = text(w.location.href, FIELDS.url);
        body.title = text(d.title, FIELDS.title);
        if (d.referrer) body.referrer = text(d.referrer, FIELDS.referrer);
        var extra = {}, more = false, k;
        if (!known) {
          extra.event = String(type);
          more = true;
        }
        if (props && typeof props === 'object') {
          for (k in props) {
            if (!Object.prototype.hasOwnProperty.call(props, k)) continue;
            if (FIELDS[k]) body[k] = text(props[k], FIELDS[k]);
            else {
              extra[k] = props[k];
              more = true;
            }
          }
        }
        if (more) body.properties = extra;
        w.fetch(cfg.api + '/track/event', {
          method: 'POST',
          keepalive: true,
          mode: 'cors',
          credentials: 'omit',
          headers: { 'Content-Type': 'application/json', Authorization: 'Public ' + cfg.key },
          body: JSON.stringify(body)
        })['catch'](function () {});
      } catch (e) {}
    };

    // Calls queued before the script loaded: window.quoting = [['product_view', {sku: '...'}], ...].
    var queued = w.quoting;
    w.quoting = {
      track: track,
      visitorId: function () {
        try {
          return visitorId();
        } catch (e) {
          return null;
        }
      }
    };
    track('page_view');
    if (queued && typeof queued.length === 'number') {
      for (var i = 0; i < queued.length; i++) if (queued[i] && queued[i][0]) track(queued[i][0], queued[i][1]);
    }
  } catch (e) {}
})(window, document, {{config}});

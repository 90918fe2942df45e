'use strict';
// require('rota') from CommonJS. Rota is an ES module: Node loads it here through require(esm)
// (on by default from Node 20.19 and 22.12), the same module instance that `import` gets. On an
// older Node that fails with ERR_REQUIRE_ESM, rethrown with the fix named.
try {
  module.exports = require('../dist/src/index.js');
} catch (err) {
  if (err && err.code === 'ERR_REQUIRE_ESM') {
    throw new Error(
      `rota is an ES module: require('rota') needs Node >= 20.19 (or >= 22.12), where require() loads ES modules (unless --no-experimental-require-module turns that off); this is Node ${process.versions.node}. Upgrade Node, or load it with import (await import('rota') in CommonJS).`,
      { cause: err },
    );
  }
  throw err;
}

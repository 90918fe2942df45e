// Types of require('rota'): the ES module's own declarations, so that `require` and `import` see
// one set of types as they get one module instance (cjs/index.cjs). A CommonJS file of its own,
// as TypeScript (module node16/nodenext) and its checkers want for the `require` condition.
export * from '../dist/src/index.js';

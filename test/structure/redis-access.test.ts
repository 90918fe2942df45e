/**
 * Every Redis command goes through src/redis/ (its stores, connections and schema checks): no
 * other module calls a command on a client, pipeline or transaction. Found with the TypeScript
 * checker: a method call whose receiver is an ioredis Redis, Cluster or command chain, outside
 * src/redis/, fails unless it manages the connection rather than sending a command.
 */
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');

/** Receiver types that send commands (ioredis's classes and its MULTI/pipeline chain). */
const CLIENT_TYPES = new Set(['Redis', 'Cluster', 'ChainableCommander', 'Pipeline']);

/** Methods that manage a connection (its life and its events), not commands. */
const CONNECTION_METHODS = new Set([
  'on',
  'once',
  'off',
  'addListener',
  'removeListener',
  'removeAllListeners',
  'listenerCount',
  'setMaxListeners',
  'emit',
  'connect',
  'disconnect',
  'quit',
  'duplicate',
  'nodes',
]);

/** The calls of commands outside src/redis/, as `file:line method`. */
function commandCallsOutsideRedis(): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  )!;
  const files = config.fileNames.filter((f) => f.includes('/src/') && !f.includes('/src/redis/'));
  const program = ts.createProgram(files, config.options);
  const checker = program.getTypeChecker();
  const found: string[] = [];
  for (const file of files) {
    const source = program.getSourceFile(file)!;
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
        const method = node.expression.name.text;
        const type = checker.getTypeAtLocation(node.expression.expression);
        const names = (type.isUnion() ? type.types : [type]).map((t) => (t.aliasSymbol ?? t.getSymbol())?.getName());
        if (names.some((n) => n !== undefined && CLIENT_TYPES.has(n)) && !CONNECTION_METHODS.has(method)) {
          const { line } = source.getLineAndCharacterOfPosition(node.getStart());
          found.push(`${relative(ROOT, file)}:${line + 1} ${method}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe('Redis access', () => {
  it('sends no command from outside src/redis/', () => {
    expect(commandCallsOutsideRedis()).toEqual([]);
  });

  it('finds a command sent from elsewhere', () => {
    // (the check itself: a file outside src/redis/ that sends one is found)
    const probe = join(dirname(import.meta.filename), 'fixtures-probe.ts');
    const text = "import type { Redis } from 'ioredis';\nexport const f = (c: Redis) => c.hget('k', 'f');\n";
    const host = ts.createCompilerHost({
      strict: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
    });
    const read = host.readFile.bind(host);
    host.readFile = (f) => (f === probe ? text : read(f));
    const exists = host.fileExists.bind(host);
    host.fileExists = (f) => f === probe || exists(f);
    const program = ts.createProgram(
      [probe],
      { strict: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext },
      host,
    );
    const checker = program.getTypeChecker();
    let method = '';
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
        const t = checker.getTypeAtLocation(node.expression.expression);
        if (CLIENT_TYPES.has((t.aliasSymbol ?? t.getSymbol())?.getName() ?? '')) method = node.expression.name.text;
      }
      ts.forEachChild(node, visit);
    };
    visit(program.getSourceFile(probe)!);
    expect(method).toBe('hget');
  });
});

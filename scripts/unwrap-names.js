// Part of scripts/bundle.js: esbuild's keepNames output, rewritten where
// the code names itself. A module of its own so that its tests can feed it
// made-up bundles (test/unit/bundle.test.js).
//
// keepNames names functions and classes with __name(target, "name"),
// which defines `name` on them, and that costs twice over
// (docs/benchmarks.md, "Eleventh pass"):
// - a closure made per call (closeLater's emitClose, made for each pipe of
//   each spawn) gets a defineProperty per call, and leaves V8's fast
//   properties;
// - a class whose `name` was defined (`static { __name(this, "X") }`) never
//   has its constructor optimized: TurboFan aborts each attempt ("dependency
//   change"), so ChildProcess, Session and the streams ran unoptimized, and
//   a worker thread compiled them again and again.
// Where the code already gives the name asked for, __name is dropped:
// `const f = () => {...}` and `var X = class {...}` name themselves f and
// X, a named class expression and a function declaration their own name,
// as in lib/. Only the shapes esbuild prints are rewritten (below); a
// renamed function or class (spawn2, named spawn) keeps its __name.
const WRAPPED = /^( *)(?:const|let|var) ([\w$]+) = \/\* @__PURE__ \*\/ __name\(/;
// What may follow that `__name(`: a function or class without a name of its
// own (a named one, `function foo2(`, is esbuild's renaming: it keeps __name).
const ANONYMOUS = /^(?:async +)?(?:\(|[\w$]+ =>|function\*? ?\(|class(?: extends\b| \{))/;
const CLASS = /^( *)(?:(?:var|let|const) )?([\w$]+) = class(?: ([\w$]+))?(?: extends [^{]+)? \{$/;
const DECLARED = /^ *__name\(([\w$]+), "([\w$]+)"\);$/;

export function unwrapNames(text) {
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const declared = DECLARED.exec(lines[i]);
    if (declared !== null && declared[1] === declared[2] && declaresFunction(lines, i, declared[1])) {
      lines[i] = null;
      continue;
    }
    const klass = CLASS.exec(lines[i]);
    if (klass !== null) {
      const [, indent, binding, own] = klass;
      const name = JSON.stringify(own ?? binding);
      if (lines[i + 1] === `${indent}  static {` && lines[i + 2] === `${indent}    __name(this, ${name});` && lines[i + 3] === `${indent}  }`) {
        lines[i + 1] = lines[i + 2] = lines[i + 3] = null;
      }
      continue;
    }
    const m = WRAPPED.exec(lines[i]);
    if (m === null) continue;
    const [head, indent, name] = m;
    if (!ANONYMOUS.test(lines[i].slice(head.length))) continue;
    const tail = `, ${JSON.stringify(name)});`;
    const open = lines[i].slice(0, head.length - '/* @__PURE__ */ __name('.length);
    if (lines[i].endsWith(tail)) {
      if (lines[i].slice(head.length, -tail.length).includes('__name(')) continue;   // several declarators
      lines[i] = `${open}${lines[i].slice(head.length, -tail.length)};`;
      continue;
    }
    const close = `${indent}}${tail}`;
    let j = i + 1;
    while (j < lines.length && lines[j] !== close && (lines[j] === '' || lines[j].startsWith(`${indent} `))) j++;
    if (lines[j] !== close) continue;
    lines[i] = `${open}${lines[i].slice(head.length)}`;
    lines[j] = `${indent}};`;
  }
  return lines.filter((line) => line !== null).join('\n');
}

/** Whether a line above line `at` declares function `name` (esbuild puts __name right after the declaration's body). */
function declaresFunction(lines, at, name) {
  const head = new RegExp(`^ *(?:async )?function\\*? ${name.replace(/\$/g, '\\$')}\\(`);
  for (let i = at - 1; i >= 0; i--) {
    if (lines[i] !== null && head.test(lines[i])) return true;
  }
  return false;
}

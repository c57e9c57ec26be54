internal import CDuktape
internal import Foundation
internal import SofaCore

/// `sofa-js`: design documents' JavaScript (map and reduce functions, `validate_doc_update`,
/// filters), run in Duktape in a process of its own. The process that needs it (a query worker,
/// storage) sends one command per line on stdin and reads one answer per line on stdout — the
/// line protocol of CouchDB's query servers — and kills it when an answer takes too long: an
/// endless loop costs a restart of this process, never a stall of the one that asked. Its memory
/// is bounded by `RLIMIT_DATA`, so an allocation without end fails here too.
///
/// Commands (JSON arrays) and answers, each `{"logs": [...], "result": …}`:
///
///     ["reset"]                                   → true (a new heap: nothing of earlier functions stays,
///                                                    not even the globals they set)
///     ["add_lib", {"name": "module source", …}]  → true: the modules map functions `require`
///                                                    ('views/lib/name'), as CouchDB's `views.lib`
///     ["add_fun", "function (doc) {…}"]           → true, or {"error": "compilation_error", "reason": …}
///     ["map_doc", doc]                            → per function, [[key, value], …] or {"error": …}
///     ["map_docs", [doc, …]]                      → the same per document (Sofa's: one round trip a batch)
///     ["reduce", [sources], [[[key, id], value], …]] → [true, [result per function]]
///     ["rereduce", [sources], [values]]           → [true, [result per function]]
///     ["validate", source, newDoc, oldDoc, userCtx, secObj] → 1, or the thrown {"forbidden"|"unauthorized": …}
///     ["validate_docs", [sources], [[newDoc, oldDoc], …], userCtx, secObj] → per pair, null or its first refusal
///     ["filter", source, [docs], req]             → [true, [true|false per document]]
public enum QueryServer {
    /// The functions every design-document function sees, as CouchDB provides them: `emit`,
    /// `log`, `sum`, `toJSON`, `isArray`; and the dispatcher of the commands above.
    static let runtime = #"""
    var __sofa = { funs: [], logs: [], emitted: null, lib: null, modules: {} };
    // CommonJS modules from the design document's views.lib: require('views/lib/name'), a path
    // relative to the requiring module ('./x', '../x') inside it; each module runs once.
    function __require(path, from) {
      var parts = from ? from.split('/').slice(0, -1) : [];
      if (path.charAt(0) !== '.') { parts = []; }
      var given = String(path).split('/');
      for (var i = 0; i < given.length; i++) {
        if (given[i] === '..') { parts.pop(); } else if (given[i] !== '.' && given[i] !== '') { parts.push(given[i]); }
      }
      var id = parts.join('/');
      if (Object.prototype.hasOwnProperty.call(__sofa.modules, id)) { return __sofa.modules[id].exports; }
      var source = { views: { lib: __sofa.lib } };
      for (var j = 0; j < parts.length; j++) {
        source = source !== null && typeof source === 'object' && Object.prototype.hasOwnProperty.call(source, parts[j])
          ? source[parts[j]] : undefined;
      }
      if (typeof source !== 'string') { throw new Error("require('" + path + "'): no module " + id); }
      var module = { id: id, exports: {} };
      __sofa.modules[id] = module;
      try {
        eval('(function (module, exports, require) {' + source + '\n})')(module, module.exports,
          function (next) { return __require(next, id); });
      } catch (e) { delete __sofa.modules[id]; throw e; }
      return module.exports;
    }
    function require(path) { return __require(path, ''); }
    function log(message) { __sofa.logs.push(typeof message === 'string' ? message : JSON.stringify(message)); }
    function isArray(value) { return Array.isArray(value); }
    function toJSON(value) { return JSON.stringify(value); }
    function sum(values) { var total = 0; for (var i = 0; i < values.length; i++) { total += values[i]; } return total; }
    function emit(key, value) {
      if (__sofa.emitted === null) { throw new Error('emit() is for map functions'); }
      __sofa.emitted.push([key === undefined ? null : key, value === undefined ? null : value]);
    }
    function __compile(source) {
      // A function written with a trailing ';' (as CouchDB takes it), or ending in a // comment.
      var text = String(source), end = text.length;
      while (end > 0 && ';\t\n\r '.indexOf(text.charAt(end - 1)) >= 0) { end--; }
      var fun = eval('(' + text.slice(0, end) + '\n)');
      if (typeof fun !== 'function') { throw new TypeError('not a function: ' + String(source).slice(0, 80)); }
      return fun;
    }
    function __map(doc) {
      var funs = __sofa.funs, out = new Array(funs.length);
      for (var i = 0; i < funs.length; i++) {
        var emitted = __sofa.emitted = [];
        try { funs[i](doc); out[i] = emitted; }
        catch (e) { out[i] = { error: 'map_error', reason: String(e) }; }
      }
      __sofa.emitted = null;
      return out;
    }
    function __validate(fun, newDoc, oldDoc, userCtx, secObj) {
      try { fun(newDoc, oldDoc, userCtx, secObj); return 1; }
      catch (e) {
        if (e && typeof e === 'object' && (e.forbidden !== undefined || e.unauthorized !== undefined)) { return e; }
        return { error: 'validation_error', reason: String(e) };
      }
    }
    function __run(command) {
      switch (command[0]) {
      case 'reset': __sofa.funs = []; __sofa.lib = null; __sofa.modules = {}; return true;
      case 'add_lib': __sofa.lib = command[1]; __sofa.modules = {}; return true;
      case 'add_fun':
        try { __sofa.funs.push(__compile(command[1])); return true; }
        catch (e) { return { error: 'compilation_error', reason: String(e) }; }
      case 'map_doc':
        return __map(command[1]);
      case 'map_docs':
        var docs = command[1], mapped = new Array(docs.length);
        for (var d = 0; d < docs.length; d++) { mapped[d] = __map(docs[d]); }
        return mapped;
      case 'reduce':
        var keys = command[2].map(function (row) { return row[0]; });
        var values = command[2].map(function (row) { return row[1]; });
        return [true, command[1].map(function (source) { return __compile(source)(keys, values, false); })];
      case 'rereduce':
        return [true, command[1].map(function (source) { return __compile(source)(null, command[2], true); })];
      case 'validate':
        return __validate(__compile(command[1]), command[2], command[3], command[4], command[5]);
      case 'validate_docs':
        var validators = command[1].map(__compile);
        return command[2].map(function (pair) {
          for (var i = 0; i < validators.length; i++) {
            var verdict = __validate(validators[i], pair[0], pair[1], command[3], command[4]);
            if (verdict !== 1) { return verdict; }
          }
          return null;
        });
      case 'filter':
        var filter = __compile(command[1]);
        return [true, command[2].map(function (doc) { return !!filter(doc, command[3]); })];
      default:
        return { error: 'unknown_command', reason: 'unknown command: ' + String(command[0]) };
      }
    }
    function __dispatch(line) {
      __sofa.logs = [];
      var result;
      try { result = __run(JSON.parse(line)); }
      catch (e) { result = { error: 'js_error', reason: String(e) }; }
      return JSON.stringify({ logs: __sofa.logs, result: result === undefined ? null : result });
    }
    """#

    /// The heap size a process may use (RLIMIT_DATA): beyond it allocations fail.
    public static let memoryLimit = 256 << 20

    /// Serves commands from stdin until it closes.
    public static func main() -> Int32 {
        outliveNoParent()
        var limit = rlimit(rlim_cur: rlim_t(memoryLimit), rlim_max: rlim_t(memoryLimit))
        setrlimit(Int32(RLIMIT_DATA.rawValue), &limit)
        guard var context = newHeap() else { return 70 }
        while let line = readLine(strippingNewline: true) {
            if line.isEmpty { continue }
            if line == Self.resetCommand {
                // A new heap: one design document's functions never see what another's left.
                sofa_duk_destroy(context)
                guard let fresh = newHeap() else { return 70 }
                context = fresh
                guard reply(Array(#"{"logs":[],"result":true}"#.utf8) + [0x0A]) else { return 74 }
                continue
            }
            let status = sofa_duk_call1(context, "__dispatch", line)
            let answer = String(cString: sofa_duk_top_string(context))
            sofa_duk_pop(context)
            // An error the dispatcher could not catch (out of memory while answering, say) is answered too.
            let failure: JSON = ["logs": [], "result": ["error": "js_error", "reason": .string(answer)]]
            guard reply(Array((status == 0 ? answer : failure.compactString).utf8) + [0x0A]) else { return 74 }
        }
        return 0
    }

    /// The command that starts over (as `JavaScriptProcess` sends it).
    static let resetCommand = #"["reset"]"#

    /// A heap with the runtime loaded; nil (said on stderr) when it cannot be made.
    static func newHeap() -> OpaquePointer? {
        guard let context = sofa_duk_create({ _, message in
            // Duktape cannot go on (an error outside any protected call): the parent starts another.
            FileHandle.standardError.write(Data("sofa-js: fatal: \(message.map { String(cString: $0) } ?? "")\n".utf8))
            exit(70)
        }) else {
            FileHandle.standardError.write(Data("sofa-js: cannot create a JavaScript heap\n".utf8))
            return nil
        }
        guard sofa_duk_eval(context, runtime) == 0 else {
            FileHandle.standardError.write(Data("sofa-js: the runtime does not load: \(String(cString: sofa_duk_top_string(context)))\n".utf8))
            sofa_duk_destroy(context)
            return nil
        }
        sofa_duk_pop(context)
        return context
    }

    /// Ends this process when the one that started it is gone, even in the middle of a function
    /// that never returns (its parent, which would have killed it, may itself have been killed):
    /// a thread looks every half second whether this process was handed to another parent. The
    /// parent names itself in `SOFA_JS_PARENT` (it may be gone before this process looks).
    static func outliveNoParent() {
        let parent = ProcessInfo.processInfo.environment[ChildProcess.parentVariable].flatMap { pid_t($0) } ?? getppid()
        Thread.detachNewThread {
            while true {
                usleep(500_000)
                if getppid() != parent { _exit(0) }
            }
        }
    }

    /// Writes one answer line to stdout; false when the parent is gone.
    static func reply(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}

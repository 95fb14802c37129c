#pragma once
// Data into a /bin/sh command without it ever becoming code.
//
// A `${node.field}` reference inside a shell command (the `command` node's `run`) is replaced by upstream
// data. How that data must be written depends on where the reference stands: unquoted, inside '...', inside
// "...", inside a here-document body. A small lexer reads the command the way POSIX sh (dash, and bash as
// /bin/sh) does, finds the context of each reference, and either escapes the value for it or refuses the
// place with the reason (a # comment, `...` backquotes, $((...)), a here-document delimiter, a reference
// glued to a preceding \ or $, anything after a construct the shells read differently).
//
// The lexer is deliberately conservative: where it cannot be sure what dash and bash both do, it refuses
// rather than guesses. The tests run every context against the real /bin/sh (tests/unit/test_shell_quote.cpp).
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace aispflow::shell {

// A byte range of the command that will be replaced by data (the text of one reference).
struct Span {
  std::size_t pos = 0;
  std::size_t length = 0;
};

enum class Context {
  word,             // unquoted: the value becomes one single-quoted word, each ' written '\''
  single_quoted,    // inside '...': each ' becomes '\'' (close, escaped quote, reopen)
  double_quoted,    // inside "...": \ $ ` " get a backslash
  heredoc,          // a here-document body with an unquoted delimiter: \ $ ` get a backslash
  heredoc_literal,  // a here-document body with a quoted delimiter (<<'EOF'): as is
  refused,          // cannot be made safe; Place::why says why
};

struct Place {
  Context context = Context::refused;
  std::string why;  // for refused: where the reference stands, e.g. "inside a # comment"
  int line = 1;     // line of the command (1-based) the reference starts on
};

// The context of every span of `script` (spans sorted by position, not overlapping). A span is lexed as an
// opaque piece of an unquoted word.
std::vector<Place> places(const std::string& script, const std::vector<Span>& spans);

// `value` written so that the shell reads back exactly its bytes at a place of context `c` (not refused).
// In Context::word the result is one word; the caller joins several with spaces for a list.
std::string escape(const std::string& value, Context c);

// Thrown by splice(): `span` is the index of the reference that cannot be placed safely.
struct SpliceError : std::runtime_error {
  SpliceError(std::size_t span_index, const std::string& why) : std::runtime_error(why), span(span_index) {}
  std::size_t span;
};

// Replaces span i of `script` by render(i, place) (which must produce text safe for place.context, e.g.
// through escape()). Throws SpliceError for a refused place, for a value holding a NUL byte (a shell
// command cannot carry one), and when the result no longer has the same here-documents ending at the same
// places (a value holding a line equal to the delimiter would end one early), or a <<- here-document would
// strip the value's leading tabs.
std::string splice(const std::string& script, const std::vector<Span>& spans,
                   const std::function<std::string(std::size_t index, const Place& place)>& render);

}  // namespace aispflow::shell

#include "pipeline/shell_quote.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace aispflow::shell {

namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
// Characters that end a plain run of word characters in command context.
bool is_special(char c) { return c != '\0' && std::strchr(" \t\n;&|()<>'\"\\$`", c) != nullptr; }

struct HereDoc {
  std::string delimiter;
  bool strip_tabs = false;     // <<-
  std::size_t body_begin = 0;  // first byte of the body
  std::size_t body_end = 0;    // start of the terminator line (or the end of the script)
};

// Reads a command the way POSIX sh does, as far as it needs to: quotes, escapes, expansions, comments,
// here-documents. Spans are opaque pieces of an unquoted word. Where dash and bash may disagree, or the
// structure gets too involved to follow with certainty, it "poisons": every later span is refused.
class Lexer {
 public:
  Lexer(const std::string& script, const std::vector<Span>& spans)
      : s_(script), n_(script.size()), spans_(spans), places_(spans.size()), heredoc_of_(spans.size(), -1) {}

  void run() {
    command(0, false);
    // A command the shell cannot read at all (an unterminated quote) refuses every reference in it.
    for (std::size_t k = broken_ ? 0 : next_; k < spans_.size(); ++k) {
      places_[k].context = Context::refused;
      places_[k].why = poison_.empty() ? "cannot be read as part of the command" : poison_;
      places_[k].line = line_of(spans_[k].pos);
    }
  }

  const std::vector<Place>& places() const { return places_; }
  const std::vector<HereDoc>& heredocs() const { return heredocs_; }
  int heredoc_of(std::size_t span) const { return heredoc_of_[span]; }
  bool poisoned() const { return !poison_.empty(); }
  std::size_t poison_pos() const { return poison_pos_; }

 private:
  struct Pending {
    std::string delimiter;
    bool strip_tabs = false;
    bool quoted = false;
    int depth = 0;
  };

  // A region in which every span is refused (a comment, backquotes, arithmetic...).
  class Refusal {
   public:
    Refusal(Lexer& lexer, std::string why) : lexer_(lexer) { lexer_.refusals_.push_back(std::move(why)); }
    ~Refusal() { lexer_.refusals_.pop_back(); }
    Refusal(const Refusal&) = delete;
    Refusal& operator=(const Refusal&) = delete;

   private:
    Lexer& lexer_;
  };

  bool done() const { return !poison_.empty(); }
  char at(std::size_t i) const { return i < n_ ? s_[i] : '\0'; }
  bool at_span() const { return next_ < spans_.size() && spans_[next_].pos == i_; }
  int line_of(std::size_t pos) const {
    return 1 + static_cast<int>(std::count(s_.begin(), s_.begin() + static_cast<long>(std::min(pos, n_)), '\n'));
  }

  // From here on, every span is refused: the shells may disagree, or the structure is beyond this lexer.
  void poison(const std::string& what) {
    if (!poison_.empty()) return;
    poison_pos_ = i_;
    poison_ = "comes after " + what + " (line " + std::to_string(line_of(i_)) +
              "), where aispflow cannot be sure how the shell reads the rest of the command";
  }
  // The command ends inside a construct (an unterminated quote): the shell would refuse all of it.
  void unterminated(const std::string& what) {
    if (!poison_.empty()) return;
    poison_pos_ = i_;
    broken_ = true;
    poison_ = "is in a command with " + what + ", which the shell cannot read";
  }

  // The span at i_: its place, then skip over it.
  void record(Context context, int heredoc = -1) {
    Place& p = places_[next_];
    p.line = line_of(i_);
    if (!refusals_.empty()) {
      p.context = Context::refused;
      p.why = refusals_.back();
    } else {
      p.context = context;
      heredoc_of_[next_] = heredoc;
    }
    i_ += spans_[next_].length;
    ++next_;
  }

  // Consumes a token of `count` bytes; a span starting inside it is glued to the token and refused.
  void consume(std::size_t count, const char* glued) {
    const std::size_t end = std::min(n_, i_ + count);
    ++i_;
    if (i_ < end && at_span()) {
      Refusal r(*this, glued);
      record(Context::refused);
      return;
    }
    i_ = end;
  }

  void single_quoted() {  // after the opening '
    while (!done()) {
      if (i_ >= n_) return unterminated("an unterminated '");
      if (at_span()) { record(Context::single_quoted); continue; }
      if (s_[i_++] == '\'') return;
    }
  }

  void double_quoted() {  // after the opening "
    while (!done()) {
      if (i_ >= n_) return unterminated("an unterminated \"");
      if (at_span()) { record(Context::double_quoted); continue; }
      const char c = s_[i_];
      if (c == '"') { ++i_; return; }
      if (c == '\\' && std::strchr("$`\"\\\n", at(i_ + 1)) && at(i_ + 1) != '\0')
        consume(2, "is escaped by the \\ before it, so its quotes would not hold");
      else if (c == '$') dollar(true);
      else if (c == '`') backquoted();
      else ++i_;
    }
  }

  // At a '$'. `quoted`: inside "..." or a here-document body.
  void dollar(bool quoted) {
    const char c1 = at(i_ + 1);
    if (c1 == '{') {  // not a reference (spans are handled before): a shell ${...} expansion
      i_ += 2;
      parameter_expansion(quoted);
    } else if (c1 == '(' && at(i_ + 2) == '(') {
      i_ += 3;
      arithmetic("inside $((...)), where the value would be evaluated as arithmetic", '(', ')', true);
    } else if (c1 == '(') {
      i_ += 2;
      command(depth_ + 1, true);
    } else if (c1 == '[') {  // bash's old $[...] arithmetic
      i_ += 2;
      arithmetic("inside $[...], where bash evaluates the value as arithmetic", '[', ']', false);
    } else if (!quoted && c1 == '\'') {
      poison("$'...', which bash reads with C escapes and dash does not");
    } else if (!quoted && c1 == '"') {
      i_ += 2;
      Refusal r(*this, "stands inside $\"...\", which bash may translate");
      double_quoted();
    } else if (c1 != '\0' && std::strchr("$#?!-*@0123456789", c1)) {
      consume(2, "comes right after a $, which would read it as part of an expansion");
    } else if (is_name_start(c1)) {
      i_ += 2;
      while (i_ < n_ && is_name_char(s_[i_])) ++i_;
    } else {
      ++i_;  // a literal $
    }
  }

  void parameter_expansion(bool quoted) {  // after "${"
    Refusal r(*this, "stands inside a ${...} expansion, where quoting rules differ between shells");
    while (!done()) {
      if (i_ >= n_) return unterminated("an unterminated ${");
      if (at_span()) { record(Context::refused); continue; }
      const char c = s_[i_];
      if (c == '}') { ++i_; return; }
      if (c == '\\') consume(2, "is escaped by a \\");
      else if (c == '\'' && quoted) return poison("a ' inside ${...} within double quotes, which dash and bash read differently");
      else if (c == '\'') { ++i_; single_quoted(); }
      else if (c == '"') { ++i_; double_quoted(); }
      else if (c == '$') dollar(quoted);
      else if (c == '`') backquoted();
      else ++i_;
    }
  }

  // After "$((" (double: ends at "))") or "$[" (ends at "]").
  void arithmetic(const char* why, char open, char close, bool double_close) {
    Refusal r(*this, why);
    int depth = 0;
    while (!done()) {
      if (i_ >= n_) return unterminated("an unterminated arithmetic expansion");
      if (at_span()) { record(Context::refused); continue; }
      const char c = s_[i_];
      if (c == open) { ++depth; ++i_; }
      else if (c == close && depth > 0) { --depth; ++i_; }
      else if (c == close) {
        if (!double_close) { ++i_; return; }
        if (at(i_ + 1) == close) { i_ += 2; return; }
        return poison("$((...) ...), which the shells may read as arithmetic or as a command");
      }
      else if (c == '\\') consume(2, "is escaped by a \\");
      else if (c == '\'') { ++i_; single_quoted(); }
      else if (c == '"') { ++i_; double_quoted(); }
      else if (c == '$') dollar(true);
      else if (c == '`') backquoted();
      else ++i_;
    }
  }

  void backquoted() {  // at the opening `
    Refusal r(*this, "stands inside `...`, whose extra level of backslashes cannot be quoted reliably (write $(...) instead)");
    ++i_;
    while (!done()) {
      if (i_ >= n_) return unterminated("an unterminated `");
      if (at_span()) { record(Context::refused); continue; }
      const char c = s_[i_];
      if (c == '`') { ++i_; return; }
      if (c == '\\') consume(2, "is escaped by a \\");
      else if (c == '<' && at(i_ + 1) == '<') return poison("a here-document inside `...`");
      else ++i_;
    }
  }

  void comment() {  // at '#'; up to the newline, which is left for the caller
    Refusal r(*this, "stands inside a # comment, which a value holding a newline would end");
    while (i_ < n_ && s_[i_] != '\n') {
      if (at_span()) record(Context::refused);
      else ++i_;
    }
  }

  // At "<<": the operator and its delimiter word; the body follows the next newline.
  void heredoc_operator() {
    i_ += 2;
    Pending p;
    p.depth = depth_;
    if (at(i_) == '-') { p.strip_tabs = true; ++i_; }
    while (at(i_) == ' ' || at(i_) == '\t') ++i_;
    Refusal r(*this, "stands in a here-document delimiter");
    while (!done() && i_ < n_ && !std::strchr(" \t\n;&|()<>", s_[i_])) {
      if (at_span()) {
        p.quoted = true;
        p.delimiter += s_.substr(i_, spans_[next_].length);
        record(Context::refused);
        continue;
      }
      const char c = s_[i_];
      if (c == '\'' || c == '"') {
        p.quoted = true;
        const std::size_t close = s_.find(c, i_ + 1);
        if (close == std::string::npos) return unterminated("an unterminated quote in a here-document delimiter");
        if (c == '"' && s_.find_first_of("\\$`", i_ + 1) < close)
          return poison("a \\, $ or ` in a here-document delimiter");
        p.delimiter += s_.substr(i_ + 1, close - i_ - 1);
        i_ = close + 1;
      } else if (c == '\\') {
        p.quoted = true;
        if (i_ + 1 >= n_ || s_[i_ + 1] == '\n') return poison("a \\ at the end of a here-document delimiter");
        p.delimiter += s_[i_ + 1];
        consume(2, "is escaped by a \\");
      } else if (c == '$' || c == '`') {
        return poison("a $ or ` in a here-document delimiter");
      } else {
        p.delimiter += c;
        ++i_;
      }
    }
    if (p.delimiter.empty() && !p.quoted) return poison("<< without a delimiter");
    pending_.push_back(std::move(p));
  }

  // Just after the newline that ends a line with pending here-documents: their bodies, in order.
  void heredoc_bodies() {
    std::vector<Pending> pending;
    pending.swap(pending_);
    for (const Pending& p : pending) {
      if (p.depth != depth_) return poison("a newline inside $(...) while a here-document is pending");
      HereDoc doc{p.delimiter, p.strip_tabs, i_, n_};
      const int index = static_cast<int>(heredocs_.size());
      while (!done() && i_ < n_) {
        std::size_t line_end = s_.find('\n', i_);
        if (line_end == std::string::npos) line_end = n_;
        std::size_t text = i_;
        if (p.strip_tabs)
          while (text < line_end && s_[text] == '\t') ++text;
        if (s_.compare(text, line_end - text, p.delimiter) == 0) {
          doc.body_end = i_;
          i_ = std::min(n_, line_end + 1);
          break;
        }
        if (p.quoted) {
          while (i_ < line_end) {
            if (at_span()) record(Context::heredoc_literal, index);
            else ++i_;
          }
        } else {
          heredoc_line(line_end, index);
        }
        if (done()) return;
        i_ = std::min(n_, line_end + 1);
      }
      heredocs_.push_back(doc);
    }
  }

  // One line of an unquoted here-document body: like "..." except that " is an ordinary character.
  void heredoc_line(std::size_t line_end, int index) {
    while (!done() && i_ < line_end) {
      if (at_span()) { record(Context::heredoc, index); continue; }
      const char c = s_[i_];
      if (c == '\\' && at(i_ + 1) == '\n')
        return poison("a \\ at the end of a here-document line, where bash and dash disagree on where the document ends");
      if (c == '\\' && std::strchr("$`\\", at(i_ + 1)) && at(i_ + 1) != '\0') consume(2, "is escaped by the \\ before it");
      else if (c == '$') dollar(true);
      else if (c == '`') backquoted();
      else ++i_;
      if (i_ > line_end) return poison("an expansion spanning lines inside a here-document");
    }
  }

  // Command context: words, operators, quotes, comments. `substitution`: inside $(...), ends at its ')'.
  void command(int depth, bool substitution) {
    const int outer_depth = depth_;
    depth_ = depth;
    int parens = 0;
    std::vector<int> arith_levels;  // paren levels at which a ((...)) opened
    bool word_start = true;
    bool in_test = false;  // inside bash's [[ ... ]]
    while (!done()) {
      if (i_ >= n_) {
        if (substitution) unterminated("an unterminated $(");
        break;
      }
      if (at_span()) {
        if (in_test) {
          Refusal r(*this, "stands inside [[ ... ]], where bash may evaluate the value as arithmetic");
          record(Context::refused);
        } else {
          record(Context::word);
        }
        word_start = false;
        continue;
      }
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == ';' || c == '&' || c == '|' || c == '>') {
        ++i_;
        word_start = true;
      } else if (c == '\n') {
        ++i_;
        word_start = true;
        if (!pending_.empty()) heredoc_bodies();
      } else if (c == '(') {
        if (word_start && at(i_ + 1) == '(') {
          arith_levels.push_back(parens);
          refusals_.push_back("stands inside ((...)), where bash evaluates the value as arithmetic");
          parens += 2;
          i_ += 2;
        } else {
          ++parens;
          ++i_;
        }
        word_start = true;
      } else if (c == ')') {
        ++i_;
        if (substitution && parens == 0) break;
        if (parens > 0) --parens;
        if (!arith_levels.empty() && parens == arith_levels.back()) {
          arith_levels.pop_back();
          refusals_.pop_back();
        }
        word_start = true;
      } else if (c == '<') {
        if (at(i_ + 1) == '<' && at(i_ + 2) == '<') {
          poison("<<< (a bash here-string)");
        } else if (at(i_ + 1) == '<') {
          heredoc_operator();
        } else {
          ++i_;
        }
        word_start = true;
      } else if (c == '\'') {
        ++i_;
        single_quoted();
        word_start = false;
      } else if (c == '"') {
        ++i_;
        double_quoted();
        word_start = false;
      } else if (c == '\\') {
        if (at(i_ + 1) == '\n') {
          i_ += 2;  // line continuation: the word goes on (or has not started)
        } else {
          consume(2, "is escaped by the \\ before it, so its quotes would not hold");
          word_start = false;
        }
      } else if (c == '$') {
        dollar(false);
        word_start = false;
      } else if (c == '`') {
        backquoted();
        word_start = false;
      } else if (c == '#' && word_start) {
        comment();
      } else {
        std::size_t end = i_;
        const std::size_t span_pos = next_ < spans_.size() ? spans_[next_].pos : n_;
        while (end < n_ && end < span_pos && !is_special(s_[end])) ++end;
        const std::string word = s_.substr(i_, end - i_);
        const bool alone = end >= n_ || std::strchr(" \t\n;&|()<>", s_[end]);
        if (word_start && alone && word == "case" && depth > 0)
          poison("case inside $(...), whose ) patterns hide where the $(...) ends");
        if (word_start && word == "alias") poison("alias, whose expansions change how later lines are read");
        if (word_start && alone && word == "[[") in_test = true;
        if (word_start && alone && word == "]]") in_test = false;
        i_ = end;
        word_start = false;
      }
    }
    while (!arith_levels.empty()) {
      arith_levels.pop_back();
      refusals_.pop_back();
    }
    depth_ = outer_depth;
  }

  const std::string& s_;
  const std::size_t n_;
  const std::vector<Span>& spans_;
  std::vector<Place> places_;
  std::vector<int> heredoc_of_;
  std::vector<HereDoc> heredocs_;
  std::vector<Pending> pending_;
  std::vector<std::string> refusals_;
  std::string poison_;
  std::size_t poison_pos_ = 0;
  bool broken_ = false;
  std::size_t i_ = 0;
  std::size_t next_ = 0;  // the next span to meet
  int depth_ = 0;         // $(...) nesting
};

}  // namespace

std::vector<Place> places(const std::string& script, const std::vector<Span>& spans) {
  Lexer lexer(script, spans);
  lexer.run();
  return lexer.places();
}

std::string escape(const std::string& value, Context c) {
  std::string out;
  out.reserve(value.size() + 2);
  switch (c) {
    case Context::word:
    case Context::single_quoted:
      if (c == Context::word) out += '\'';
      for (char ch : value) {
        if (ch == '\'') out += "'\\''";
        else out += ch;
      }
      if (c == Context::word) out += '\'';
      return out;
    case Context::double_quoted:
    case Context::heredoc: {
      const char* special = c == Context::double_quoted ? "\\$`\"" : "\\$`";
      for (char ch : value) {
        if (ch != '\0' && std::strchr(special, ch)) out += '\\';
        out += ch;
      }
      return out;
    }
    case Context::heredoc_literal: return value;
    case Context::refused: break;
  }
  throw std::logic_error("shell::escape: a refused place has no escaping");
}

std::string splice(const std::string& script, const std::vector<Span>& spans,
                   const std::function<std::string(std::size_t, const Place&)>& render) {
  Lexer before(script, spans);
  before.run();
  const std::vector<Place>& where = before.places();

  std::string out;
  std::vector<std::size_t> out_start(spans.size()), out_end(spans.size());
  std::vector<long> delta_after(spans.size());  // output offset minus script offset after span k
  std::size_t last = 0;
  long delta = 0;
  for (std::size_t k = 0; k < spans.size(); ++k) {
    const Place& p = where[k];
    if (p.context == Context::refused) throw SpliceError(k, p.why);
    std::string text = render(k, p);
    if (text.find('\0') != std::string::npos)
      throw SpliceError(k, "holds a NUL byte, which a shell command cannot carry");
    out.append(script, last, spans[k].pos - last);
    const int doc = before.heredoc_of(k);
    if (doc >= 0 && before.heredocs()[static_cast<std::size_t>(doc)].strip_tabs) {
      const std::size_t line_start = out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1;
      const bool at_line_start = out.find_first_not_of('\t', line_start) == std::string::npos;
      if (text.find("\n\t") != std::string::npos || (at_line_start && !text.empty() && text[0] == '\t'))
        throw SpliceError(k, "has a line starting with a tab, which the <<- here-document would remove");
    }
    out_start[k] = out.size();
    out += text;
    out_end[k] = out.size();
    last = spans[k].pos + spans[k].length;
    delta += static_cast<long>(text.size()) - static_cast<long>(spans[k].length);
    delta_after[k] = delta;
  }
  out.append(script, last, std::string::npos);

  // Every value must leave the structure around it as it was: re-read the result and compare.
  auto mapped = [&](std::size_t pos) {
    long d = 0;
    for (std::size_t k = 0; k < spans.size() && spans[k].pos + spans[k].length <= pos; ++k) d = delta_after[k];
    return static_cast<std::size_t>(static_cast<long>(pos) + d);
  };
  auto blame = [&](std::size_t out_pos) {  // the last value inserted before out_pos
    std::size_t k = 0;
    while (k + 1 < spans.size() && out_start[k + 1] <= out_pos) ++k;
    return k;
  };
  const std::vector<Span> none;
  Lexer after(out, none);
  after.run();
  const auto& docs = before.heredocs();
  const auto& docs_after = after.heredocs();
  for (std::size_t d = 0; d < docs.size(); ++d) {
    const bool same = d < docs_after.size() && docs_after[d].delimiter == docs[d].delimiter &&
                      docs_after[d].body_begin == mapped(docs[d].body_begin) &&
                      docs_after[d].body_end == mapped(docs[d].body_end);
    if (same) continue;
    std::size_t culprit = spans.size();
    for (std::size_t k = 0; k < spans.size() && culprit == spans.size(); ++k)
      if (before.heredoc_of(k) == static_cast<int>(d)) culprit = k;
    if (culprit == spans.size()) culprit = blame(mapped(docs[d].body_begin));
    throw SpliceError(culprit, "holds a line that would end the here-document <<" + docs[d].delimiter +
                                   " early; the rest of it would run as commands");
  }
  if (after.poisoned() && !before.poisoned() && !spans.empty())
    throw SpliceError(blame(after.poison_pos()), "changes how the shell would read the rest of the command");
  if (docs_after.size() != docs.size() && !spans.empty())
    throw SpliceError(blame(docs_after.size() > docs.size() ? docs_after[docs.size()].body_begin : out.size()),
                      "changes the here-documents of the command");
  return out;
}

}  // namespace aispflow::shell

// Task readers and prompt rendering (lm-eval task YAMLs and utils, OLMES RC formats).
#include "replica/eval/tasks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "replica/core/error.h"
#include "replica/core/parse_number.h"
#include "replica/core/pystr.h"
#include "replica/core/python_random.h"

namespace replica::eval {
namespace {

using nlohmann::json;

constexpr int64_t kFewshotSeed = 1234;  // lm-eval's simple_evaluate(fewshot_random_seed=1234)

// One JSONL row and where it came from ("file:line"), for error messages.
struct Row {
  json doc;
  std::string where;
};

std::vector<Row> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), "{}: cannot open task file", path);
  std::vector<Row> rows;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); n++) {
    if (py::strip(line).empty()) continue;
    Row r{json(), fmt::format("{}:{}", path, n)};
    try {
      r.doc = json::parse(line);
    } catch (const json::exception& e) {  // a parse_error, or out_of_range for a number like 1e999
      fail("{}: invalid JSON ({})", r.where, e.what());
    }
    check(r.doc.is_object(), "{}: expected a JSON object", r.where);
    rows.push_back(std::move(r));
  }
  check(!rows.empty(), "{}: no documents", path);
  return rows;
}

const json& field(const Row& r, const char* key) {
  check(r.doc.contains(key), "{}: missing field '{}'", r.where, key);
  return r.doc[key];
}

std::string str(const Row& r, const char* key) {
  const json& v = field(r, key);
  check(v.is_string(), "{}: field '{}' must be a string, got {}", r.where, key, v.dump());
  return v.get<std::string>();
}

std::vector<std::string> str_list(const Row& r, const json& v, const char* key) {
  check(v.is_array() && !v.empty(), "{}: field '{}' must be a non-empty list of strings", r.where, key);
  std::vector<std::string> out;
  for (const json& x : v) {
    check(x.is_string(), "{}: field '{}' must be a list of strings, got {}", r.where, key, x.dump());
    out.push_back(x.get<std::string>());
  }
  return out;
}

// An int, or a string of digits (HellaSwag's label, WinoGrande's answer): lm-eval renders then literal_evals.
int64_t integer(const Row& r, const char* key) {
  const json& v = field(r, key);
  if (v.is_number_integer() && (v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(INT64_MAX) : true))
    return v.get<int64_t>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos)
      if (const std::optional<int64_t> n = parse_int64(s)) return *n;
  }
  fail("{}: field '{}' must be an integer below 2^63 (or a string of its digits), got {}", r.where, key, v.dump());
}

int64_t index_of(const Row& r, const std::vector<std::string>& labels, const std::string& key, const char* what) {
  for (size_t i = 0; i < labels.size(); i++)
    if (labels[i] == key) return int64_t(i);
  fail("{}: {} '{}' is not one of the choice labels", r.where, what, key);
}

TaskDoc multiple_choice(const std::string& context, const std::vector<std::string>& choices, int64_t gold,
                        const Row& r) {
  check(choices.size() >= 2, "{}: {} choice(s), expected at least 2 (a single choice is always right)", r.where,
        choices.size());
  for (const std::string& c : choices)  // acc_norm divides each choice's log-likelihood by its length in bytes
    check(!c.empty(), "{}: an empty choice (acc_norm divides by the length of each choice)", r.where);
  check(gold >= 0 && gold < int64_t(choices.size()), "{}: gold index {} outside the {} choices", r.where, gold,
        choices.size());
  TaskDoc d{{}, choices, gold};
  for (const std::string& c : choices) d.requests.push_back({context, " " + c});
  return d;
}

// {"text": [...], "label": [...]} choices and an answerKey (ARC, OpenBookQA).
TaskDoc lettered(const Row& r, const std::string& context, const std::string& answer_key) {
  const json& choices = field(r, "choices");
  check(choices.is_object(), "{}: field 'choices' must be an object with 'text' and 'label' lists", r.where);
  check(choices.contains("text") && choices.contains("label"), "{}: field 'choices' needs 'text' and 'label'", r.where);
  std::vector<std::string> text = str_list(r, choices["text"], "choices.text");
  std::vector<std::string> labels = str_list(r, choices["label"], "choices.label");
  check(text.size() == labels.size(), "{}: choices.text and choices.label differ in length", r.where);
  for (size_t i = 0; i < labels.size(); i++)
    check(std::find(labels.begin(), labels.begin() + i, labels[i]) == labels.begin() + i,
          "{}: choices.label has '{}' twice (each choice needs its own label)", r.where, labels[i]);
  return multiple_choice(context, text, index_of(r, labels, answer_key, "answerKey"), r);
}

TaskDoc arc(const Row& r, TaskFormat) {
  return lettered(r, "Question: " + str(r, "question") + "\nAnswer:", str(r, "answerKey"));
}

TaskDoc openbookqa(const Row& r, TaskFormat f) {
  const std::string q = str(r, "question_stem");
  return lettered(r, f == TaskFormat::lm_eval ? q : "Question: " + q + "\nAnswer:", py::lstrip(str(r, "answerKey")));
}

TaskDoc hellaswag(const Row& r, TaskFormat) {
  const std::string ctx = str(r, "ctx_a") + " " + py::capitalize(str(r, "ctx_b"));
  std::vector<std::string> endings = str_list(r, field(r, "endings"), "endings");
  for (std::string& e : endings) e = hellaswag_preprocess(e);
  return multiple_choice(hellaswag_preprocess(str(r, "activity_label") + ": " + ctx), endings, integer(r, "label"),
                         r);
}

TaskDoc piqa(const Row& r, TaskFormat f) {
  const std::string head = f == TaskFormat::lm_eval ? "Question: " : "Goal: ";
  const std::string context = head + str(r, "goal") + "\nAnswer:", sol1 = str(r, "sol1"), sol2 = str(r, "sol2");
  return multiple_choice(context, {sol1, sol2}, integer(r, "label"), r);
}

// super_glue/boolq `label` (0 = False, 1 = True); google/boolq's `answer` bool is accepted too.
TaskDoc boolq(const Row& r, TaskFormat f) {
  bool yes;
  if (r.doc.contains("label")) {
    const int64_t label = integer(r, "label");
    check(label == 0 || label == 1, "{}: field 'label' must be 0 (False) or 1 (True), got {}", r.where, label);
    yes = label == 1;
  } else {
    const json& a = field(r, "answer");
    check(a.is_boolean(), "{}: field 'answer' must be true or false", r.where);
    yes = a.get<bool>();
  }
  const std::string ctx = str(r, "passage") + "\nQuestion: " + str(r, "question") + "?\nAnswer:";
  if (f == TaskFormat::lm_eval) return multiple_choice(ctx, {"no", "yes"}, yes ? 1 : 0, r);
  return multiple_choice(ctx, {"yes", "no"}, yes ? 0 : 1, r);  // OLMES order
}

// Partial scoring: one context per option (the sentence up to the blank with the option spliced in), the
// shared continuation " " + the rest of the sentence after the blank, stripped.
TaskDoc winogrande(const Row& r, TaskFormat) {
  const std::string sentence = str(r, "sentence");
  const size_t blank = sentence.find('_');
  check(blank != std::string::npos, "{}: field 'sentence' has no '_' blank", r.where);
  const std::string target = " " + py::strip(sentence.substr(blank + 1));
  const std::vector<std::string> options = {str(r, "option1"), str(r, "option2")};
  const int64_t answer = integer(r, "answer");
  check(answer == 1 || answer == 2, "{}: field 'answer' must be \"1\" or \"2\", got {}", r.where, answer);
  TaskDoc d{{}, options, answer - 1};
  for (const std::string& o : options) d.requests.push_back({sentence.substr(0, blank) + o, target});
  return d;
}

std::string mmlu_question(const Row& r) {
  const std::vector<std::string> c = str_list(r, field(r, "choices"), "choices");
  check(c.size() == 4, "{}: field 'choices' must hold 4 strings, got {}", r.where, c.size());
  return fmt::format("{}\nA. {}\nB. {}\nC. {}\nD. {}\nAnswer:", py::strip(str(r, "question")), c[0], c[1], c[2], c[3]);
}

int64_t mmlu_answer(const Row& r) {
  const int64_t a = integer(r, "answer");
  check(a >= 0 && a < 4, "{}: field 'answer' must be 0-3, got {}", r.where, a);
  return a;
}

const std::vector<std::string> kLetters = {"A", "B", "C", "D"};

// lm-eval: description "The following are multiple choice questions (with answers) about <subject>.\n\n" and the
// first n dev questions of the subject; OLMES (OLMo's MMLU inst+5) writes a colon instead of the period.
std::vector<TaskDoc> mmlu(const std::vector<Row>& rows, const TaskSpec& spec, TaskFormat f) {
  std::map<std::string, std::vector<Row>> dev;
  if (spec.num_fewshot > 0) {
    check(!spec.fewshot_path.empty(), "task mmlu: num_fewshot {} needs fewshot (the dev split JSONL)", spec.num_fewshot);
    for (Row& r : read_jsonl(spec.fewshot_path)) {
      const std::string subject = str(r, "subject");
      dev[subject].push_back(std::move(r));
    }
  }
  std::vector<TaskDoc> docs;
  for (const Row& r : rows) {
    const std::string subject = str(r, "subject");
    std::string ctx = fmt::format("The following are multiple choice questions (with answers) about {}{}\n\n",
                                  py::replace(subject, "_", " "), f == TaskFormat::lm_eval ? "." : ":");
    const std::vector<Row>& shots = dev[subject];
    check(int64_t(shots.size()) >= spec.num_fewshot, "{}: subject '{}' has {} dev questions in {}, {} shots asked",
          r.where, subject, shots.size(), spec.fewshot_path, spec.num_fewshot);
    for (int64_t k = 0; k < spec.num_fewshot; k++)
      ctx += mmlu_question(shots[size_t(k)]) + " " + kLetters[size_t(mmlu_answer(shots[size_t(k)]))] + "\n\n";
    docs.push_back(multiple_choice(ctx + mmlu_question(r), kLetters, mmlu_answer(r), r));
  }
  return docs;
}

using Render = TaskDoc (*)(const Row&, TaskFormat);

struct TaskKind {
  std::string name;
  Render render;  // null: mmlu
  bool acc_norm;  // lm-eval reports acc_norm too
  // lm-eval draws one shot more than asked, then drops the document itself, when the task's fewshot_split equals
  // its test_split: for the tasks without a test split both are None, so they do (ContextSampler.get_context).
  bool extra_draw;
};

const std::vector<TaskKind>& kinds() {
  static const std::vector<TaskKind> k = {
      {"arc_easy", arc, true, false},      {"arc_challenge", arc, true, false}, {"hellaswag", hellaswag, true, true},
      {"piqa", piqa, true, true},          {"boolq", boolq, false, true},       {"openbookqa", openbookqa, true, false},
      {"winogrande", winogrande, false, true}, {"mmlu", nullptr, false, false}};
  return k;
}

// A solved example as lm-eval writes it: doc_to_text (WinoGrande: the gold option spliced in) + target_delimiter
// " " + the gold choice (WinoGrande: the rest of the sentence), which is the gold request's context + continuation.
std::string labelled_example(const TaskDoc& d) {
  const Request& gold = d.requests[size_t(d.gold)];
  return gold.context + gold.continuation;
}

// lm-eval's ContextSampler.get_context for every document in order with one random.Random(1234) per task:
// rnd.sample(shot rows, n) with n = num_fewshot (+1 when kind.extra_draw), shots equal to the document dropped,
// the first num_fewshot kept, each followed by fewshot_delimiter "\n\n"; the result prefixes every request.
void prefix_sampled_shots(std::vector<TaskDoc>& docs, const std::vector<Row>& rows, const TaskSpec& spec,
                          const TaskKind& kind, TaskFormat format) {
  check(std::filesystem::exists(spec.fewshot_path),
        "task {}: num_fewshot {} needs the {} split the shots come from: no file {}", spec.name, spec.num_fewshot,
        fewshot_split(spec.name), spec.fewshot_path);
  const std::vector<Row> shot_rows = read_jsonl(spec.fewshot_path);
  std::vector<std::string> examples;
  for (const Row& r : shot_rows) examples.push_back(labelled_example(kind.render(r, format)));
  const size_t draws = size_t(spec.num_fewshot) + (kind.extra_draw ? 1 : 0);
  check(draws <= shot_rows.size(), "task {}: {} shots (lm-eval draws {}) from the {} documents of {}", spec.name,
        spec.num_fewshot, draws, shot_rows.size(), spec.fewshot_path);
  PythonRandom rnd(kFewshotSeed);
  for (size_t i = 0; i < docs.size(); i++) {
    std::string shots;
    size_t kept = 0;
    for (size_t j : rnd.sample(shot_rows.size(), draws))
      if (shot_rows[j].doc != rows[i].doc && kept < size_t(spec.num_fewshot)) {
        shots += examples[j] + "\n\n";
        kept++;
      }
    for (Request& r : docs[i].requests) r.context = shots + r.context;
  }
}

}  // namespace

TaskFormat parse_task_format(const std::string& name) {
  if (name == "lm-eval") return TaskFormat::lm_eval;
  if (name == "olmes") return TaskFormat::olmes;
  fail("unknown task format '{}' (expected lm-eval or olmes)", name);
}

const char* task_format_name(TaskFormat f) { return f == TaskFormat::lm_eval ? "lm-eval" : "olmes"; }

std::string hellaswag_preprocess(std::string_view text) {
  std::string t = py::replace(py::strip(text), " [title]", ". ");
  // re.sub("\\[.*?\\]", "", t): a '[' followed by the nearest ']' with no newline in between ('.' stops at \n).
  std::string out;
  for (size_t i = 0; i < t.size();) {
    if (t[i] == '[') {
      const size_t close = t.find_first_of("]\n", i + 1);
      if (close != std::string::npos && t[close] == ']') {
        i = close + 1;
        continue;
      }
    }
    out += t[i++];
  }
  return py::replace(out, "  ", " ");
}

const char* fewshot_split(const std::string& task) { return task == "mmlu" ? "dev" : "train"; }

const std::vector<std::string>& task_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const TaskKind& k : kinds()) n.push_back(k.name);
    return n;
  }();
  return names;
}

Task load_task(const TaskSpec& spec, TaskFormat format) {
  const TaskKind* kind = nullptr;
  for (const TaskKind& k : kinds())
    if (k.name == spec.name) kind = &k;
  check(kind != nullptr, "unknown task '{}' (expected one of {})", spec.name, fmt::join(task_names(), ", "));
  check(spec.num_fewshot >= 0, "task {}: num_fewshot must be 0 or more, got {}", spec.name, spec.num_fewshot);
  check(spec.num_fewshot == 0 || spec.name == "mmlu" || format == TaskFormat::lm_eval,
        "task {}: num_fewshot {} in the olmes format: OLMES takes its shots from curated lists, which replica does "
        "not ship; use the lm-eval format",
        spec.name, spec.num_fewshot);
  std::vector<Row> rows = read_jsonl(spec.path);
  if (spec.limit > 0 && int64_t(rows.size()) > spec.limit) rows.resize(size_t(spec.limit));
  Task task{spec.name, format, {"acc"}, {}};
  if (format == TaskFormat::olmes) task.metrics = {"acc", "len_norm", "bpb"};
  else if (kind->acc_norm) task.metrics.push_back("acc_norm");
  if (kind->render == nullptr) {
    task.docs = mmlu(rows, spec, format);
  } else {
    for (const Row& r : rows) task.docs.push_back(kind->render(r, format));
    if (spec.num_fewshot > 0) prefix_sampled_shots(task.docs, rows, spec, *kind, format);
  }
  return task;
}

}  // namespace replica::eval

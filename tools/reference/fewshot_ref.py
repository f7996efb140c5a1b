#!/usr/bin/python3
"""Independent reference for replica's few-shot prompts (src/replica/eval/tasks.cc): lm-evaluation-harness
v0.4.9.2's logic transcribed from its source, on the HF `datasets` JSONL exports of the tasks.

usage: /usr/bin/python3 tools/reference/fewshot_ref.py DIR NUM_FEWSHOT [LIMIT] > contexts.json
For every task with DIR/<task>.jsonl and DIR/<task>_train.jsonl, prints {task: [[context of each request] per doc]}.

What is transcribed (lm_eval/api/task.py, lm_eval/api/samplers.py, the task YAMLs and utils):
- simple_evaluate(fewshot_random_seed=1234) -> task.set_fewshot_seed(1234): one random.Random(1234) per task,
  shared by every document, which build_all_requests visits in order (the first LIMIT of them).
- fewshot_docs(): the training split (no task here sets fewshot_split), after process_docs.
- ContextSampler.get_context(doc, n): draws n + 1 when config.fewshot_split == config.test_split (both None for
  the tasks without a test split), rnd.sample(docs, draws), drops shots equal to doc, keeps n; each shot is
  doc_to_text (or doc_to_choice[doc_to_text] when that is an int) + target_delimiter " " + the target
  (doc_to_choice[doc_to_target] when that is an int) + fewshot_delimiter "\\n\\n".
- fewshot_context: labeled examples + doc_to_text(doc); WinoGrande (multiple inputs) returns the examples alone
  and construct_requests appends each choice to them.
"""

import json
import os
import random
import re
import sys


def hellaswag_preprocess(text):
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    text = text.replace("  ", " ")
    return text


def hellaswag_process(doc):
    ctx = doc["ctx_a"] + " " + doc["ctx_b"].capitalize()
    out = dict(doc)
    out.update({"query": hellaswag_preprocess(doc["activity_label"] + ": " + ctx),
                "choices": [hellaswag_preprocess(e) for e in doc["endings"]], "gold": int(doc["label"])})
    return out


def winogrande_choices(doc):
    idx = doc["sentence"].index("_")
    return [doc["sentence"][:idx] + opt for opt in [doc["option1"], doc["option2"]]]


# Per task: (doc_to_text, doc_to_target, doc_to_choice, has test split, process_docs).
TASKS = {
    "arc_easy": (lambda d: f"Question: {d['question']}\nAnswer:", lambda d: d["choices"]["label"].index(d["answerKey"]),
                 lambda d: d["choices"]["text"], True, None),
    "arc_challenge": (lambda d: f"Question: {d['question']}\nAnswer:",
                      lambda d: d["choices"]["label"].index(d["answerKey"]), lambda d: d["choices"]["text"], True, None),
    "hellaswag": (lambda d: d["query"], lambda d: int(str(d["label"])), lambda d: d["choices"], False,
                  hellaswag_process),
    "piqa": (lambda d: f"Question: {d['goal']}\nAnswer:", lambda d: d["label"], lambda d: [d["sol1"], d["sol2"]],
             False, None),
    "boolq": (lambda d: f"{d['passage']}\nQuestion: {d['question']}?\nAnswer:", lambda d: d["label"],
              lambda d: ["no", "yes"], False, None),
    "openbookqa": (lambda d: d["question_stem"], lambda d: d["choices"]["label"].index(d["answerKey"].lstrip()),
                   lambda d: d["choices"]["text"], True, None),
    "winogrande": (lambda d: {"1": 0, "2": 1}[d["answer"]],
                   lambda d: d["sentence"][d["sentence"].index("_") + 1:].strip(), winogrande_choices, False, None),
}


def read(path, process):
    with open(path) as f:
        docs = [json.loads(line) for line in f if line.strip()]
    return [process(d) for d in docs] if process else docs


def contexts(name, directory, num_fewshot, limit):
    doc_to_text, doc_to_target, doc_to_choice, has_test, process = TASKS[name]
    docs = read(os.path.join(directory, name + ".jsonl"), process)[:limit]
    shots = read(os.path.join(directory, name + "_train.jsonl"), process)
    rnd = random.Random(1234)
    fewshot_split, test_split = None, "test" if has_test else None
    out = []
    for doc in docs:
        draws = num_fewshot + 1 if fewshot_split == test_split else num_fewshot
        selected = [x for x in rnd.sample(shots, draws) if x != doc][:num_fewshot]
        labeled = ""
        for s in selected:
            text, target = doc_to_text(s), doc_to_target(s)
            labeled += text if isinstance(text, str) else doc_to_choice(s)[text]
            labeled += " " + (target if isinstance(target, str) else str(doc_to_choice(s)[target])) + "\n\n"
        text = doc_to_text(doc)
        if isinstance(text, int):  # multiple inputs: one context per choice
            out.append([labeled + c for c in doc_to_choice(doc)])
        else:
            out.append([labeled + text for _ in doc_to_choice(doc)])
    return out


def main():
    directory, num_fewshot = sys.argv[1], int(sys.argv[2])
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
    result = {}
    for name in TASKS:
        if os.path.exists(os.path.join(directory, name + ".jsonl")) and \
                os.path.exists(os.path.join(directory, name + "_train.jsonl")):
            result[name] = contexts(name, directory, num_fewshot, limit)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()

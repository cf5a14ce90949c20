package queues

import (
	"sort"
	"strings"

	"github.com/qms-dev/qms/core/platform"
)

// MaxAnswerLength bounds one answer of a formResponse, in characters. The
// spec gives formResponse no bound; a text answer the size of an essay is a
// client bug, not a customer's answer.
const MaxAnswerLength = 500

// CheckAnswers checks a formResponse (question id -> answer) against the
// queue's pre-attention questions and records every failure under path
// ("formResponse.<questionId>"): an id that names no question
// (unknown_question), a required question left unanswered or blank
// (required), an answer to a choice question that is not one of its option
// labels (oneof), an answer longer than MaxAnswerLength (max_length).
// Any module that takes answers (turns, appointments) uses it, so one
// queue's questions are enforced alike everywhere.
func (p PreAttention) CheckAnswers(v *platform.Validator, path string, answers map[string]string) {
	byID := make(map[string]Question, len(p.Questions))
	for _, q := range p.Questions {
		if q.ID != nil {
			byID[*q.ID] = q
		}
	}
	// Sorted, so the failures come in a stable order.
	ids := make([]string, 0, len(answers))
	for id := range answers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ap := platform.Path(path, id)
		q, ok := byID[id]
		if !ok {
			v.Fail(ap, "unknown_question", "is not a question of this queue")
			continue
		}
		a := answers[id]
		v.Len(ap, a, 0, MaxAnswerLength)
		if q.Type != nil && *q.Type == QuestionChoice && strings.TrimSpace(a) != "" && !q.hasOption(a) {
			v.Fail(ap, "oneof", "must be one of the question's options: %s", strings.Join(q.optionLabels(), ", "))
		}
	}
	for _, q := range p.Questions {
		if q.ID == nil || q.Required == nil || !*q.Required {
			continue
		}
		if strings.TrimSpace(answers[*q.ID]) == "" {
			v.Fail(platform.Path(path, *q.ID), "required", "must be answered: the question is required")
		}
	}
}

func (q Question) hasOption(answer string) bool {
	for _, o := range q.Options {
		if o.Label != nil && *o.Label == answer {
			return true
		}
	}
	return false
}

func (q Question) optionLabels() []string {
	out := make([]string, 0, len(q.Options))
	for _, o := range q.Options {
		if o.Label != nil {
			out = append(out, *o.Label)
		}
	}
	return out
}

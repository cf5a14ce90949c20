package queues_test

import (
	"strings"
	"testing"

	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
)

func TestCheckAnswersAgainstTheQuestions(t *testing.T) {
	pre := queues.PreAttention{Questions: []queues.Question{
		{ID: platform.Ptr("reason"), Label: platform.Ptr("Reason"), Type: platform.Ptr(queues.QuestionChoice), Required: platform.Ptr(true),
			Options: []queues.Option{{Label: platform.Ptr("Checkup"), Bare: true}, {Label: platform.Ptr("Vaccine"), Priority: nil}}},
		{ID: platform.Ptr("name"), Label: platform.Ptr("Name"), Type: platform.Ptr(queues.QuestionText), Required: platform.Ptr(true)},
		{ID: platform.Ptr("extra"), Label: platform.Ptr("Extra"), Type: platform.Ptr(queues.QuestionText), Required: platform.Ptr(false)},
	}}
	cases := []struct {
		name    string
		answers map[string]string
		want    map[string]string
	}{
		{"all good, object and bare options alike", map[string]string{"reason": "Vaccine", "name": "Ada"}, map[string]string{}},
		{"nothing answered", nil, map[string]string{"formResponse.reason": "required", "formResponse.name": "required"}},
		{"blank is unanswered", map[string]string{"reason": "Checkup", "name": "  "}, map[string]string{"formResponse.name": "required"}},
		{"an option that is not one", map[string]string{"reason": "checkup", "name": "Ada"}, map[string]string{"formResponse.reason": "oneof"}},
		{"an unknown question", map[string]string{"reason": "Checkup", "name": "Ada", "age": "40"}, map[string]string{"formResponse.age": "unknown_question"}},
		{"too long", map[string]string{"reason": "Checkup", "name": "Ada", "extra": strings.Repeat("x", queues.MaxAnswerLength+1)},
			map[string]string{"formResponse.extra": "max_length"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v platform.Validator
			pre.CheckAnswers(&v, "formResponse", c.answers)
			got := map[string]string{}
			for _, f := range v.Fields() {
				got[f.Path] = f.Rule
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for p, r := range c.want {
				if got[p] != r {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
	// A queue without questions takes no answers.
	var v platform.Validator
	queues.PreAttention{}.CheckAnswers(&v, "formResponse", map[string]string{"a": "b"})
	if len(v.Fields()) != 1 {
		t.Fatalf("fields %v", v.Fields())
	}
}

package entities_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/qms-dev/qms/core/entities"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/platform/platformtest"
	"github.com/qms-dev/qms/test/testkit"
)

func TestValidationBoundsOfSpec27(t *testing.T) {
	in := entities.CreateInput{
		Name:         platform.Ptr("A"),
		WebsiteURL:   platform.Ptr("not a url"),
		SupportEmail: platform.Ptr("nobody"),
		SupportPhone: platform.Ptr("12"),
	}
	e, _ := platform.AsError(in.Validate())
	if e == nil {
		t.Fatal("want a validation error")
	}
	got := map[string]bool{}
	for _, f := range platform.FieldErrors(e) {
		got[f.Path] = true
	}
	for _, p := range []string{"name", "websiteUrl", "supportEmail", "supportPhone"} {
		if !got[p] {
			t.Errorf("%s not reported: %v", p, got)
		}
	}
	ok := entities.CreateInput{Name: platform.Ptr("Main"), SupportPhone: platform.Ptr("+34 600-123-456"),
		SupportEmail: platform.Ptr("help@example.com"), WebsiteURL: platform.Ptr("https://example.com")}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid entity refused: %v", err)
	}
}

func TestPatchNullClearsAndAbsentKeeps(t *testing.T) {
	ctx := context.Background()
	clock := platformtest.NewClock(time.Now())
	set, store := testkit.MemorySet(t, clock)
	svc := entities.NewService(set.Entities, store, clock)
	e, err := svc.Create(ctx, "acc", entities.CreateInput{Name: platform.Ptr("Main"),
		Description: platform.Ptr("desc"), SupportEmail: platform.Ptr("a@b.co")})
	if err != nil {
		t.Fatal(err)
	}
	var patch entities.UpdateInput
	if err := json.Unmarshal([]byte(`{"description": null, "name": "Renamed"}`), &patch); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Update(ctx, "acc", e.ID, patch)
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != nil || got.Name != "Renamed" || got.SupportEmail == nil {
		t.Fatalf("patch: %+v", got)
	}
	if _, err := svc.Update(ctx, "other", e.ID, patch); !platform.IsCode(err, platform.CodeForbidden) {
		t.Fatalf("other account: want FORBIDDEN, got %v", err)
	}
	if err := json.Unmarshal([]byte(`{"name": null}`), &patch); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Update(ctx, "acc", e.ID, entities.UpdateInput{Name: platform.Patch[string]{Set: true, Null: true}}); !platform.IsCode(err, platform.CodeValidation) {
		t.Fatalf("null name: want VALIDATION_ERROR, got %v", err)
	}
}

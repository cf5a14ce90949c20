package platform_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/qms-dev/qms/core/platform"
)

func TestStampActor(t *testing.T) {
	st := "sta_1"
	a := platform.Actor{Type: "counter", ID: "ctr_1", StationID: &st}
	for _, c := range []struct{ in, want string }{
		{`{"displayCode":"A001","turnId":"t"}`, `{"actor":{"type":"counter","id":"ctr_1","stationId":"sta_1"},"displayCode":"A001","turnId":"t"}`},
		{`{}`, `{"actor":{"type":"counter","id":"ctr_1","stationId":"sta_1"}}`},
		// Not an object, or an actor already named: as it is.
		{`[1]`, `[1]`},
		{`{"actor":{"type":"other"},"x":1}`, `{"actor":{"type":"other"},"x":1}`},
		{`{broken`, `{broken`},
	} {
		got := string(platform.StampActor(json.RawMessage(c.in), a))
		if got != c.want {
			t.Errorf("StampActor(%s) = %s, want %s", c.in, got, c.want)
		}
		if json.Valid([]byte(c.in)) && !json.Valid([]byte(got)) {
			t.Errorf("StampActor(%s) is not JSON: %s", c.in, got)
		}
	}
	ctx := context.Background()
	if _, ok := platform.ActorFrom(ctx); ok {
		t.Fatal("a bare context carries an actor")
	}
	got, ok := platform.ActorFrom(platform.WithActor(ctx, a))
	if !ok || got.ID != "ctr_1" || *got.StationID != "sta_1" {
		t.Fatalf("ActorFrom = %+v, %v", got, ok)
	}
}

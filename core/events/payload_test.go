package events_test

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/qms-dev/qms/core/appointments"
	"github.com/qms-dev/qms/core/notify"
	"github.com/qms-dev/qms/core/platform"
	"github.com/qms-dev/qms/core/queues"
	"github.com/qms-dev/qms/core/ticket"
	"github.com/qms-dev/qms/core/turns"
)

// payloads holds one filled payload per event of spec section 6: the type
// the core that raises the event marshals its data from.
var payloads = map[string]any{
	platform.EventTurnCreated:          turns.TurnCreated{TurnID: "turn_1", QueueRunID: "run_1", DisplayCode: "A001", Number: 1},
	platform.EventTurnCalled:           turns.TurnCalled{TurnID: "turn_1", QueueRunID: "run_1", DisplayCode: "A001", CallCount: 1, StationID: platform.Ptr("sta_1")},
	platform.EventTurnCompleted:        turns.TurnCompleted{TurnID: "turn_1", QueueRunID: "run_1", DisplayCode: "A001"},
	platform.EventTurnCancelled:        turns.TurnCancelled{TurnID: "turn_1", QueueRunID: "run_1", DisplayCode: "A001", Reason: "tolerance_expired"},
	platform.EventTurnReopened:         turns.TurnReopened{TurnID: "turn_1", QueueRunID: "run_1", DisplayCode: "A001", PreviousStatus: "CANCELLED"},
	platform.EventQueueOpened:          queues.QueueOpened{QueueID: "que_1", QueueRunID: "run_1", QueueName: "Main", Status: "OPEN"},
	platform.EventQueueClosed:          queues.QueueClosed{QueueID: "que_1", QueueRunID: "run_1", QueueName: "Main", Status: "CLOSED"},
	platform.EventAppointmentScheduled: appointments.AppointmentScheduled{AppointmentID: "apt_1", QueueRunID: "run_1", SlotStart: "2026-03-08T09:00:00Z"},
	platform.EventAppointmentCompleted: appointments.AppointmentCompleted{AppointmentID: "apt_1", QueueRunID: "run_1", Status: "COMPLETED"},
	platform.EventTurnHelpRequested:    ticket.HelpRequestedData{TurnID: "turn_1", QueueRunID: "run_1", DisplayCode: "A001", HelpRequestID: "hlp_1", QueueID: "que_1"},
	platform.EventTurnSLABreached:      turns.TurnSLABreached{TurnID: "turn_1", QueueRunID: "run_1", DisplayCode: "A001", MaxWaitMinutes: 10, Status: "WAITING"},
	platform.EventTurnHelpAnswered:     ticket.HelpAnsweredData{TurnID: "turn_1", QueueRunID: "run_1", DisplayCode: "A001", HelpRequestID: "hlp_1", QueueID: "que_1", Reply: "On my way"},
	platform.EventNotificationStatus:   notify.StatusChanged{NotificationID: "ntf_1", TurnID: "turn_1", QueueRunID: "run_1", Status: "SENT"},
}

// members names the members of the spec (section 6 and "Event data
// carries turnId, queueRunId and displayCode for turns") each event's data
// must carry, whatever else it holds.
func members(name string) []string {
	if turns.IsEvent(name) {
		return []string{"turnId", "queueRunId", "displayCode"}
	}
	return []string{"queueRunId"}
}

func TestEveryEventCarriesWhatTheSpecNames(t *testing.T) {
	for _, name := range platform.EventNames {
		p, ok := payloads[name]
		if !ok {
			t.Errorf("%s has no payload type in this test", name)
			continue
		}
		e, err := platform.NewEvent("acc_1", name, p, platform.SystemClock{}.Now())
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(e.Data, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range members(name) {
			if s, _ := m[k].(string); s == "" {
				t.Errorf("%s data lacks %s: %s", name, k, e.Data)
			}
		}
		if turns.IsEvent(name) {
			var ref turns.EventRef
			if err := e.Decode(&ref); err != nil || ref.TurnID != "turn_1" || ref.DisplayCode != "A001" || ref.QueueRunID != "run_1" {
				t.Errorf("%s does not decode into turns.EventRef: %+v %v", name, ref, err)
			}
		}
	}
}

// The data used to be a map, which encoding/json writes with its keys in
// byte order; the payload structs declare their fields in that order, so
// webhook bodies, the stream and the log keep their bytes. A field added
// out of order fails here.
func TestPayloadsKeepTheirBytes(t *testing.T) {
	for name, p := range payloads {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		asMap, _ := json.Marshal(m)
		if !bytes.Equal(b, asMap) {
			t.Errorf("%s: members out of byte order (want %s):\n%s\n%s", name, strings.Join(keys, ","), b, asMap)
		}
	}
}

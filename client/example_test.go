package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/qms-dev/qms/client"
)

// A queue, a turn taken and called, and the live stream of what happened.
// QMS_URL is the server (http://localhost:8080 under `make run`) and
// QMS_API_KEY the key it printed; `go test ./client` runs this example
// against a qms of its own and checks what it prints.
func Example() {
	ctx := context.Background()
	c := client.New(os.Getenv("QMS_URL"), os.Getenv("QMS_API_KEY"))

	ent, err := c.CreateEntity(ctx, client.EntityCreate{Name: "Main branch"})
	if err != nil {
		log.Fatal(err)
	}
	q, err := c.CreateQueue(ctx, client.QueueCreate{EntityID: ent.ID, Name: "Pharmacy", Type: "TURN",
		TurnPrefix: client.Ptr("A"), TurnPadding: client.Ptr(3), Stations: []client.StationInput{{Label: "Window 1"}}})
	if err != nil {
		log.Fatal(err)
	}
	run := q.Runs[0].ID // the queue's open run: turns are taken in a run
	events, err := c.SubscribeEvents(ctx, client.StreamOptions{RunID: run})
	if err != nil {
		log.Fatal(err)
	}
	defer events.Close()

	// The SDK gives the create an idempotency key: retried, it returns the
	// same turn.
	turn, err := c.CreateTurn(ctx, run, client.TurnCreate{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(turn.DisplayCode, turn.Status, *turn.Position)
	if _, err := c.CallTurn(ctx, turn.ID, client.TurnCall{StationID: client.Value(q.Stations[0].ID)}); err != nil {
		log.Fatal(err)
	}
	// The stream carries what commits after it opened: queue.opened (raised
	// when the queue was made) came before.
	for i := 0; i < 2; i++ {
		ev, err := events.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Event, ev.Data["displayCode"])
	}
	// Output:
	// A001 WAITING 1
	// turn.created A001
	// turn.called A001
}

// A wait estimate shows a range only once the queue has timed a few
// services: before that, range is nil and basis is "default", so a screen
// has no invented figure to show.
func Example_waitEstimate() {
	ctx := context.Background()
	c := client.New(os.Getenv("QMS_URL"), os.Getenv("QMS_API_KEY"))
	ent, err := c.CreateEntity(ctx, client.EntityCreate{Name: "Estimates branch"})
	if err != nil {
		log.Fatal(err)
	}
	q, err := c.CreateQueue(ctx, client.QueueCreate{EntityID: ent.ID, Name: "Counter", Type: "TURN",
		Stations: []client.StationInput{{Label: "Desk"}}})
	if err != nil {
		log.Fatal(err)
	}
	turn, err := c.CreateTurn(ctx, q.Runs[0].ID, client.TurnCreate{})
	if err != nil {
		log.Fatal(err)
	}
	if w := turn.WaitEstimate; w != nil && w.Range != nil {
		fmt.Printf("about %d-%d min\n", w.Range.P50Minutes, w.Range.P90Minutes)
	} else if w != nil {
		fmt.Println("no range yet; basis", w.Basis)
	}
	// Output:
	// no range yet; basis default
}

// Errors of the API are *client.Error, with its status, code, details and
// request id.
func ExampleError() {
	c := client.New(os.Getenv("QMS_URL"), os.Getenv("QMS_API_KEY"))
	_, err := c.CreateTurn(context.Background(), "run_nope", client.TurnCreate{})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code, apiErr.RequestID != "")
	}
	// Output:
	// 404 NOT_FOUND true
}

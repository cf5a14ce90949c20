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
func Example() {
	ctx := context.Background()
	c := client.New("http://localhost:8080", os.Getenv("QMS_API_KEY"))

	ent, err := c.CreateEntity(ctx, client.EntityCreate{Name: "Main branch"})
	if err != nil {
		log.Fatal(err)
	}
	q, err := c.CreateQueue(ctx, client.QueueCreate{EntityID: ent.ID, Name: "Pharmacy", Type: "TURN",
		TurnPrefix: client.Ptr("A"), Stations: []client.StationInput{{Label: "Window 1"}}})
	if err != nil {
		log.Fatal(err)
	}
	events, err := c.SubscribeEvents(ctx, client.StreamOptions{RunID: q.Runs[0].ID})
	if err != nil {
		log.Fatal(err)
	}
	defer events.Close()

	// The SDK gives the create an idempotency key: retried, it returns the
	// same turn.
	turn, err := c.CreateTurn(ctx, q.Runs[0].ID, client.TurnCreate{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CallTurn(ctx, turn.ID, client.TurnCall{StationID: client.Value(q.Stations[0].ID)}); err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 3; i++ { // queue.opened, turn.created, turn.called
		ev, err := events.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(ev.Event, ev.Data["displayCode"])
	}
}

// Errors of the API are *client.Error, with its code, details and request id.
func ExampleError() {
	c := client.New("http://localhost:8080", os.Getenv("QMS_API_KEY"))
	_, err := c.CreateTurn(context.Background(), "run_...", client.TurnCreate{})
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.Code == "QUEUE_CLOSED" {
		fmt.Println("closed; request", apiErr.RequestID, apiErr.Details)
	}
}

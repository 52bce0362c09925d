package remotemcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// Open an engine, add a server, list its tools and call one. The engine
// is lazy (NoStartupConnect): it connects a server only when a request
// needs it. Every remote tool call needs the person's approval; here
// CallHandler.Approve stands in for asking them.
func Example() {
	ctx := context.Background()
	srv, err := fixture.Start(fixture.Options{}) // a loopback MCP server
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "remotemcp-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	c, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, NoStartupConnect: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Adding a server grants its own origin.
	added, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: srv.URL()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("granted:", len(added.Granted) == 1)

	tools, err := c.Tools(ctx, localapi.ToolsRequest{ServerID: "fx", Connect: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}

	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/add", Arguments: json.RawMessage(`{"a": 1, "b": 2}`)},
		localapi.CallHandler{Approve: func(r localapi.ApprovalRequest) (localapi.Decision, error) {
			fmt.Printf("approve %s %s? yes\n", r.Tool, r.Arguments)
			return localapi.Decision{Approved: true}, nil
		}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Outcome, res.Content[0].Text)
	// Output:
	// granted: true
	// mcp__fx__add
	// mcp__fx__ask
	// mcp__fx__big
	// mcp__fx__echo
	// mcp__fx__fail
	// mcp__fx__schema
	// mcp__fx__slow
	// approve mcp__fx__add {"a": 1, "b": 2}? yes
	// ok 3
}

// A server may ask the person a question while a tool runs (MCP
// elicitation). CallHandler.Question is told of it, with the form to
// fill in; Answer (from any goroutine, or any process on the data
// directory) lets the call continue.
func Example_answerQuestion() {
	ctx := context.Background()
	srv, err := fixture.Start(fixture.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	dir, err := os.MkdirTemp("", "remotemcp-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := remotemcp.Open(ctx, remotemcp.Options{DataDir: dir, NoStartupConnect: true})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "fx", URL: srv.URL()}); err != nil {
		log.Fatal(err)
	}

	res, err := c.Call(ctx, localapi.CallRequest{Tool: "fx/ask", Approved: true}, localapi.CallHandler{
		Question: func(q localapi.Card) {
			fmt.Printf("%s asks: %s\n", q.ServerID, q.Message)
			for _, f := range q.Form.Fields {
				if f.Required {
					fmt.Printf("  required: %s (%s, %s)\n", f.Name, f.Type, f.Description)
				}
			}
			err := c.Answer(ctx, q.ID, localapi.Answer{Action: "accept", Content: map[string]any{"name": "Ada"}})
			if err != nil {
				log.Fatal(err)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// fx asks: What is your name?
	//   required: name (string, Your name)
	// hello Ada (42)
}

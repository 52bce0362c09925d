package remotemcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp"
	"github.com/remotemcp/remotemcp/localapi"
)

// Open an engine, add a remote MCP server, list its tools and call one.
// The engine is lazy (NoStartupConnect): it connects a server only when
// a request needs it. Every remote tool call needs the person's approval;
// here CallHandler.Approve stands in for asking them.
func Example() {
	ctx := context.Background()

	// A remote MCP server (go-sdk) with one tool, on loopback.
	type addArgs struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "v1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "add", Description: "Adds two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(in.A + in.B)}}}, nil, nil
		})
	remote := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer remote.Close()

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
	added, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "calc", URL: remote.URL})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("granted:", len(added.Granted) == 1)

	tools, err := c.Tools(ctx, localapi.ToolsRequest{ServerID: "calc", Connect: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools.Tools {
		fmt.Println(t.Name)
	}

	res, err := c.Call(ctx, localapi.CallRequest{Tool: "calc/add", Arguments: json.RawMessage(`{"a": 1, "b": 2}`)},
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
	// mcp__calc__add
	// approve mcp__calc__add {"a": 1, "b": 2}? yes
	// ok 3
}

// A server may ask the person a question while a tool runs (MCP
// elicitation). CallHandler.Question is told of it, with the form to
// fill in; Answer (from any goroutine, or any process on the data
// directory) lets the call continue.
func Example_answerQuestion() {
	ctx := context.Background()

	// A remote MCP server whose tool asks for a name before it answers.
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "v1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greets you by name."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			answer, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message:         "What is your name?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"Your name"}},"required":["name"]}`),
			})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("hello %v", answer.Content["name"])}}}, nil, nil
		})
	remote := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer remote.Close()

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
	if _, err := c.AddServer(ctx, localapi.AddServerRequest{ID: "greeter", URL: remote.URL}); err != nil {
		log.Fatal(err)
	}

	res, err := c.Call(ctx, localapi.CallRequest{Tool: "greeter/greet", Approved: true}, localapi.CallHandler{
		Question: func(q localapi.Card) {
			fmt.Printf("%s asks: %s\n", q.ServerID, q.Message)
			for _, f := range q.Form.Fields {
				fmt.Printf("  %s (%s, %s)\n", f.Name, f.Type, f.Description)
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
	// greeter asks: What is your name?
	//   name (string, Your name)
	// hello Ada
}

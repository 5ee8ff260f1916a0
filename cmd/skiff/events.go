package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/skiffnode/skiff/internal/cliview"
)

// eventsOptions are the flags of `skiff events`.
type eventsOptions struct {
	co            clientOptions
	namespace     string
	allNamespaces bool
	forObject     string
	types         []string
	output        string
}

func newEventsCmd() *cobra.Command {
	var o eventsOptions
	cmd := &cobra.Command{
		Use:   "events",
		Short: "List the recent events of the agent's pods (like kubectl events)",
		Long: `List the events the agent recorded about its pods, oldest first, as
kubectl events does. The agent keeps events for an hour.`,
		Example: `  skiff events
  skiff events --for pod/web-node1
  skiff events -A --types Warning -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.co.addFlags(cmd)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace of the events")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list the events of all namespaces")
	f.StringVar(&o.forObject, "for", "", "only the events about this object: pod/NAME")
	f.StringSliceVar(&o.types, "types", nil, "only events of these types: Normal, Warning")
	f.StringVarP(&o.output, "output", "o", "", "output format: wide, json or yaml")
	return cmd
}

func (o *eventsOptions) run(cmd *cobra.Command) error {
	if o.output != "" && o.output != "wide" && o.output != "json" && o.output != "yaml" {
		return fmt.Errorf("--output %q: must be one of wide, json, yaml", o.output)
	}
	sel, err := o.selector()
	if err != nil {
		return err
	}
	cl, err := o.co.client()
	if err != nil {
		return err
	}
	list, err := cl.Events(cmd.Context(), sel)
	if err != nil {
		return err
	}
	list.Items = o.filterTypes(list.Items)
	switch o.output {
	case "json", "yaml":
		for i := range list.Items {
			if list.Items[i].Kind == "" {
				list.Items[i].Kind, list.Items[i].APIVersion = "Event", "v1"
			}
		}
		if list.Kind == "" {
			list.Kind, list.APIVersion = "EventList", "v1"
		}
		return cliview.PrintObject(cmd.OutOrStdout(), list, o.output)
	}
	if len(list.Items) == 0 {
		if o.allNamespaces {
			fmt.Fprintln(cmd.ErrOrStderr(), "No events found.")
		} else {
			fmt.Fprintf(cmd.ErrOrStderr(), "No events found in %s namespace.\n", o.namespace)
		}
		return nil
	}
	opts := cliview.EventTableOptions{AllNamespaces: o.allNamespaces, Wide: o.output == "wide"}
	return cliview.PrintEvents(cmd.OutOrStdout(), list.Items, opts, time.Now())
}

// selector builds the server-side field selector of the flags.
func (o *eventsOptions) selector() (string, error) {
	var terms []string
	if !o.allNamespaces {
		terms = append(terms, "metadata.namespace="+fields.EscapeValue(o.namespace))
	}
	if o.forObject != "" {
		kind, name, ok := strings.Cut(o.forObject, "/")
		if !ok || name == "" || strings.Contains(name, "/") {
			return "", fmt.Errorf("--for %q: must be in resource/name form, e.g. pod/web", o.forObject)
		}
		switch strings.ToLower(kind) {
		case "pod", "pods", "po":
		default:
			return "", fmt.Errorf("--for %q: skiff records events about pods only", o.forObject)
		}
		terms = append(terms, "involvedObject.kind=Pod", "involvedObject.name="+fields.EscapeValue(name))
	}
	for _, t := range o.types {
		if !strings.EqualFold(t, v1.EventTypeNormal) && !strings.EqualFold(t, v1.EventTypeWarning) {
			return "", fmt.Errorf("--types %q: valid types are Normal or Warning", t)
		}
	}
	return strings.Join(terms, ","), nil
}

// filterTypes keeps the events of the --types given (all without it).
func (o *eventsOptions) filterTypes(events []v1.Event) []v1.Event {
	if len(o.types) == 0 {
		return events
	}
	var out []v1.Event
	for _, e := range events {
		for _, t := range o.types {
			if strings.EqualFold(e.Type, t) {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

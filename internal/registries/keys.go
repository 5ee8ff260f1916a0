package registries

import (
	"fmt"

	yamlv3 "go.yaml.in/yaml/v3"
)

// checkKeys refuses a mapping key that is not a string (`0.:`, `5000:`,
// `true:`): sigs.k8s.io/yaml turns such keys into strings on its way to
// JSON, two of them can become the same one (`0.` and `0` are both "0"),
// and which of the two then wins changes from run to run. A document
// yaml.v3 cannot read is left to the strict decoder's own error.
func checkKeys(data []byte) error {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return nil
	}
	return walkKeys(&doc)
}

// walkKeys is checkKeys on n and everything under it.
func walkKeys(n *yamlv3.Node) error {
	if n.Kind == yamlv3.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yamlv3.ScalarNode && k.Tag != "!!str" && k.Tag != "!!merge" {
				return fmt.Errorf("line %d: key %q is not a string (%s); quote it", k.Line, k.Value, k.Tag)
			}
		}
	}
	for _, c := range n.Content {
		if err := walkKeys(c); err != nil {
			return err
		}
	}
	return nil
}

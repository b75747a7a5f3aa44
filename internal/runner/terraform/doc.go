// Package terraform runs OpenTofu or Terraform for knit's terraform
// components: it lays out a work dir per component, writes inputs, and plans,
// applies, destroys and reads outputs through hashicorp/terraform-exec.
package terraform

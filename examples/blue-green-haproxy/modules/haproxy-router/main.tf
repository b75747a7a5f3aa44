# The example's blue/green router (switch.sh): haproxy whose live frontend
# sends every request to the active color and whose preview frontend sends
# every request to the other. A change flips the running haproxy through
# its runtime API, without a reload: no request fails.
variable "blue" {
  type        = string
  description = "the blue instance, HOST:PORT"
}

variable "green" {
  type        = string
  description = "the green instance, HOST:PORT (blue's while no green is up)"
}

variable "active_color" {
  type        = string
  default     = "blue"
  description = "the color the live frontend sends every request to: blue or green"
  validation {
    condition     = contains(["blue", "green"], var.active_color)
    error_message = "active_color is blue or green."
  }
}

variable "port" {
  type        = number
  default     = 0
  description = "the live port (127.0.0.1); 0: a free one"
}

variable "preview_port" {
  type        = number
  default     = 0
  description = "the preview port (127.0.0.1); 0: a free one"
}

variable "run_dir" {
  type = string
}

locals {
  state  = "${var.run_dir}/haproxy"
  script = "${abspath(path.module)}/switch.sh"
}

resource "terraform_data" "haproxy" {
  input = { state = local.state, script = local.script }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash '${self.input.script}' stop"
    environment = { STATE = self.input.state, BLUE = "-", GREEN = "-" }
  }
}

resource "terraform_data" "switch" {
  triggers_replace = [var.blue, var.green, var.active_color, var.port, var.preview_port]
  depends_on       = [terraform_data.haproxy]

  provisioner "local-exec" {
    command = "bash '${local.script}' apply"
    environment = {
      STATE = local.state, PORT = var.port, PREVIEW_PORT = var.preview_port,
      BLUE = var.blue, GREEN = var.green, ACTIVE = var.active_color
    }
  }
}

data "local_file" "addr" {
  filename   = "${local.state}/addr"
  depends_on = [terraform_data.switch]
}

data "local_file" "preview_addr" {
  filename   = "${local.state}/preview_addr"
  depends_on = [terraform_data.switch]
}

output "url" {
  value       = "http://${trimspace(data.local_file.addr.content)}"
  description = "the live address: the active color"
}

output "preview_url" {
  value       = "http://${trimspace(data.local_file.preview_addr.content)}"
  description = "the preview address: the other color"
}

# One instance of the example app (app.sh: Debian's haproxy answering with
# its version, with Prometheus metrics). A canary or a second color is
# another instance of this module, in a work dir of its own.
variable "app_version" {
  type        = string
  description = "what every answer says (v1, v2)"
}

variable "error_percent" {
  type        = number
  default     = 0
  description = "the share of requests answered 500, in percent"
}

variable "run_dir" {
  type        = string
  description = "where the example's processes keep their state (and the Prometheus targets folder)"
}

locals {
  # The component's work dir (…/work/TEAM/ENV/COMPONENT/module) names the
  # instance: app, app-canary, app-green.
  component = basename(dirname(abspath(path.module)))
  state     = "${var.run_dir}/app-${substr(sha1(abspath(path.module)), 0, 10)}"
}

resource "terraform_data" "app" {
  triggers_replace = [var.app_version, var.error_percent]
  input            = { state = local.state, script = "${abspath(path.module)}/app.sh", targets = "${var.run_dir}/targets" }

  provisioner "local-exec" {
    command = "bash '${self.input.script}' start"
    environment = {
      STATE = self.input.state, VERSION = var.app_version, ERROR_PERCENT = var.error_percent,
      TARGETS = self.input.targets, COMPONENT = local.component
    }
  }

  provisioner "local-exec" {
    when        = destroy
    command     = "bash '${self.input.script}' stop"
    environment = { STATE = self.input.state, VERSION = "-", TARGETS = self.input.targets }
  }
}

data "local_file" "addr" {
  filename   = "${local.state}/addr"
  depends_on = [terraform_data.app]
}

output "addr" {
  value       = trimspace(data.local_file.addr.content)
  description = "127.0.0.1:PORT"
}

output "url" {
  value = "http://${trimspace(data.local_file.addr.content)}"
}

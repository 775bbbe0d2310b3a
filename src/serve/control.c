/* SPDX-License-Identifier: Apache-2.0 */
/* control.c: the node budget, caps handed down by a cluster controller, heartbeats, and the
 * control loop's periodic work (ramps, the watchdog, probes, re-planning under hysteresis and
 * a rate limit). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_int.h"
#include "util/budget.h"
#include "util/units.h"

/* ---- budget, caps, heartbeat ---- */

int pfi_srv_budget_parse(srv_node *n, const char *s, double *watts, pfi_err *err)
{
    if (!strcmp(s, "min")) {
        double w = 0;
        for (int i = 0; i < n->n_gpus; i++)
            w += n->gpu[i].dev.min_limit_w;
        *watts = w;
        return PFI_OK;
    }
    pfi_budget b;
    int rc = pfi_budget_parse(s, &b, err);
    if (rc != PFI_OK)
        return rc;
    return pfi_budget_watts(&b, s, n->nominal_w, PFI_SRV_BUDGET_REF, watts, err);
}

/* The budget a restart with resume comes back to. */
static void save_budget(srv_node *n, const char *value)
{
    if (pfi_audit_set_state(n->audit, "budget_w", value) != PFI_OK)
        pfi_srv_event_add(n, "db_error", "budget %s not saved: a restart would not come back to it",
                      value);
}

/* A local budget that would raise the limits of a node whose caps a cluster controller holds
 * (external mode, heard within SRV_CONTROLLER_HEARD_S) is refused unless forced: the node went
 * up at once and the site stayed over its budget until the controller's next caps (a second or
 * more), while an event, which only lowers, was refused in the same mode.  to_w: the budget
 * the change would plan for (INFINITY: none); decide_mu held, n->snap fresh. */
static int controller_guard(srv_node *n, double to_w, int force, pfi_err *err)
{
    /* No budget can take the GPUs past their ceiling: without one, their original limits
     * (what a removed budget goes back to); with one, their maximum. */
    double held = 0, ceil_w = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        held += n->snap[i].dev.limit_w;
        ceil_w += isinf(to_w) ? n->gpu[i].original_w : n->snap[i].dev.max_limit_w;
    }
    int none = isinf(to_w);
    if (to_w > ceil_w)
        to_w = ceil_w;
    pthread_mutex_lock(&n->mu);
    double heard = pfi_srv_controller_heard_s(n);
    int held_by = n->mode == SRV_MODE_EXTERNAL && heard <= SRV_CONTROLLER_HEARD_S;
    char by[sizeof n->hb_controller];
    snprintf(by, sizeof by, "%s", n->hb_controller);
    pthread_mutex_unlock(&n->mu);
    if (force || !held_by || !(to_w > held + 0.5))
        return PFI_OK;
    return pfi_err_set(err, PFI_EBUSY, "this node's caps come from %s (external mode, heard %.0f "
                       "s ago): %s the %.0f W it holds would put the site over its budget until "
                       "%s sends caps again; change the site's budget there, or force it here "
                       "(?force=1; pfi ctl budget ... --force)",
                       by, heard, none ? "no budget, raising the GPUs above" : "a budget above",
                       held, by);
}

/* A budget set or removed here by force, or with no controller heard within
 * SRV_CONTROLLER_HEARD_S, is the node's own operator taking it back: a watchdog a controller
 * armed is disarmed with it, else it fired ttl later, in local mode, and cut every GPU to the
 * safe budget under the operator's own limits.  A budget from a controller heard lately (one
 * may steer a node so) keeps its watchdog: disarmed, a controller that died just after left the
 * node at that budget for good.  A controller still there arms it again with its next
 * heartbeat.  decide_mu held. */
static void operator_disarms(srv_node *n, const char *what, int force)
{
    pthread_mutex_lock(&n->mu);
    double heard = pfi_srv_controller_heard_s(n);
    int armed = n->hb_ttl_s > 0 && (force || !(heard <= SRV_CONTROLLER_HEARD_S));
    if (armed)
        n->hb_ttl_s = 0;
    char by[sizeof n->hb_controller];
    snprintf(by, sizeof by, "%s", n->hb_controller[0] ? n->hb_controller : "a controller");
    pthread_mutex_unlock(&n->mu);
    if (!armed)
        return;
    pfi_srv_hold_save(n, 0);
    pfi_srv_event_add(n, "watchdog", "disarmed: %s on this node (armed by %s; its next heartbeat "
                                     "arms it again)",
                      what, by);
}

int pfi_srv_budget_set(srv_node *n, double watts, double ramp_s, int force, json_t **result,
                       pfi_err *err)
{
    if (!(watts > 0 && watts <= SRV_MAX_BUDGET_W))
        return pfi_err_set(err, PFI_EINVAL, "budget: expected watts above 0 and at most %g",
                           SRV_MAX_BUDGET_W);
    if (!(ramp_s >= 0 && ramp_s <= 86400))
        return pfi_err_set(err, PFI_EINVAL, "ramp_s: expected 0 to 86400 seconds");
    pthread_mutex_lock(&n->decide_mu);
    pfi_srv_snapshot(n);
    int rc = controller_guard(n, fmin(watts, pfi_srv_grid_limit(n, watts, NULL, 0)), force, err);
    if (rc != PFI_OK) {
        pthread_mutex_unlock(&n->decide_mu);
        return rc;
    }
    /* A ramp starts from where the node is: the sum of its limits (as counted for the budget)
     * when no budget is in force or the limits sit below it, else the budget in force. */
    double from = pfi_srv_current_budget(n), held = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        const pfi_device *d = &n->snap[i].dev;
        held += isnan(d->enforced_w) || d->limit_w >= d->enforced_w ? d->limit_w : d->enforced_w;
    }
    if (isfinite(held) && (!isfinite(from) || held < from))
        from = held;
    if (ramp_s > 0 && isfinite(from)) {
        /* Check the destination now, so an infeasible ramp is refused before it starts. */
        srv_plan plan;
        rc = pfi_srv_plan_compute(n->snap, n->n_gpus, n->cand, n->n_cand, watts, &n->keep,
                                  &plan, err);
        if (rc == PFI_OK) {
            pthread_mutex_lock(&n->mu);
            n->ramp_from_w = from;
            n->ramp_to_w = watts;
            n->ramp_t0 = pfi_clock_mono();
            n->ramp_t1 = n->ramp_t0 + ramp_s;
            n->ramping = 1;
            n->mode = SRV_MODE_LOCAL;
            n->caps_epoch = 0; /* the controller's command ends with its epochs */
            pthread_mutex_unlock(&n->mu);
            pfi_srv_event_add(n, "budget", "budget ramps from %.0f W to %.0f W over %.0f s", from,
                          watts, ramp_s);
            if (result)
                *result = json_pack("{s:f, s:f, s:f, s:s}", "from_w", from, "budget_w", watts,
                                    "ramp_s", ramp_s, "mode", "local");
        }
    } else {
        /* A grid event in force holds the budget below the manual one. */
        double eff = pfi_srv_grid_limit(n, watts, NULL, 0);
        char reason[128];
        if (eff < watts - 0.5)
            snprintf(reason, sizeof reason, "budget set to %.0f W (a grid event holds %.0f W)",
                     watts, eff);
        else
            snprintf(reason, sizeof reason, "budget set to %.0f W", watts);
        rc = pfi_srv_decide(n, eff, SRV_MODE_LOCAL, NULL, reason, result, err);
        if (rc == PFI_OK) {
            pthread_mutex_lock(&n->mu);
            n->ramping = 0;
            n->caps_epoch = 0;
            pthread_mutex_unlock(&n->mu);
        }
    }
    if (rc == PFI_OK) {
        pthread_mutex_lock(&n->mu);
        n->manual_w = watts;
        pthread_mutex_unlock(&n->mu);
        char v[32];
        snprintf(v, sizeof v, "%.3f", watts);
        save_budget(n, v);
        operator_disarms(n, force ? "a budget forced" : "a budget set", force);
    }
    pthread_mutex_unlock(&n->decide_mu);
    return rc;
}

int pfi_srv_budget_clear(srv_node *n, int force, json_t **result, pfi_err *err)
{
    pthread_mutex_lock(&n->decide_mu);
    pfi_srv_snapshot(n);
    double eff = pfi_srv_grid_limit(n, NAN, NULL, 0); /* NAN unless a grid event holds one */
    int rc = controller_guard(n, isnan(eff) ? INFINITY : eff, force, err);
    if (rc != PFI_OK) {
        pthread_mutex_unlock(&n->decide_mu);
        return rc;
    }
    rc = pfi_srv_decide(n, eff, SRV_MODE_LOCAL, NULL,
                        isnan(eff) ? "budget removed" : "budget removed (a grid event holds one)",
                        result, err);
    if (rc == PFI_OK) {
        pthread_mutex_lock(&n->mu);
        n->ramping = 0;
        n->manual_w = NAN;
        n->caps_epoch = 0;
        pthread_mutex_unlock(&n->mu);
        save_budget(n, "none");
        operator_disarms(n, force ? "the budget removed by force" : "the budget removed", force);
    }
    pthread_mutex_unlock(&n->decide_mu);
    return rc;
}

/* The largest epoch taken: what a JSON number holds exactly (2^53).  A cluster controller
 * numbers its waves from its wall clock in ms, and above the last epoch this node says it
 * applied (cluster/apply.c), so an epoch of a clock running ahead does not make the later
 * ones stale.  (Epochs more than a day ahead of this node's clock were refused: a controller
 * whose clock ran 25 h ahead could cap nothing, and a budget cut stayed unmet.) */
static long long epoch_bound(void)
{
    return 9007199254740992LL;
}

int pfi_srv_caps_set(srv_node *n, long long epoch, const double *asked, const char *controller,
                     json_t **result, pfi_err *err)
{
    if (epoch < 0 || epoch > epoch_bound())
        return pfi_err_set(err, PFI_EINVAL,
                           "epoch %lld: expected 1 to %lld (2^53)", epoch, epoch_bound());
    /* Half a watt past a GPU's range is taken (a controller's arithmetic), as the range's end:
     * the GPU holds no less than its minimum, so a cap below it kept in the budget in force
     * would leave the node "over budget" by the difference with nothing to lower. */
    double caps[PFI_MAX_GPUS];
    for (int i = 0; i < n->n_gpus; i++) {
        const pfi_device *d = &n->gpu[i].dev;
        caps[i] = asked[i];
        if (isnan(caps[i]))
            continue;
        if (!(caps[i] >= d->min_limit_w - 0.5 && caps[i] <= d->max_limit_w + 0.5))
            return pfi_err_set(err, PFI_ERANGE, "cap %.0f W is outside GPU %d's range %.0f-%.0f W",
                               caps[i], i, d->min_limit_w, d->max_limit_w);
        if (caps[i] < d->min_limit_w)
            caps[i] = d->min_limit_w;
        else if (caps[i] > d->max_limit_w)
            caps[i] = d->max_limit_w;
    }
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    int rc = pfi_srv_other_controller(n, controller, err);
    pthread_mutex_unlock(&n->mu);
    if (rc != PFI_OK) {
        pfi_srv_refused_controller(n, controller);
    } else if (epoch > 0 && epoch <= n->caps_epoch) {
        rc = pfi_err_set(err, PFI_EBUSY, "stale epoch %lld: caps of epoch %lld are applied",
                         epoch, n->caps_epoch);
    } else {
        pfi_srv_snapshot(n);
        /* A GPU the caps do not name keeps its cap: the controller's last one for it when the
         * node holds the controller's caps already, else the limit it holds (a controller names
         * only the GPUs whose caps change).  Named, every GPU can be held to a grid event of
         * the node's own, and given back its cap when the event ends. */
        double intent[PFI_MAX_GPUS]; /* the caps kept for later decisions */
        pthread_mutex_lock(&n->mu);
        int external = n->mode == SRV_MODE_EXTERNAL;
        for (int i = 0; i < n->n_gpus; i++) {
            intent[i] = caps[i];
            if (!isnan(caps[i]) || !n->snap[i].up)
                continue;
            double lim = n->snap[i].dev.limit_w;
            intent[i] = external && !isnan(n->ext_caps[i]) ? n->ext_caps[i] : lim;
            /* Not above what it holds in this decision: a controller's wave that lowers one
             * GPU raises none (held to an event, the others would take what it gave up, and
             * the controller has spent it on other nodes). */
            caps[i] = intent[i] < lim ? intent[i] : lim;
        }
        pthread_mutex_unlock(&n->mu);
        /* A grid event the node took before these caps came holds them (node.c's
         * plan_external): said in the decision, and once as an event when it starts to. */
        char reason[192], gid[PFI_EVENT_ID_MAX];
        double gw = pfi_srv_grid_hold(n, gid, sizeof gid), sum = 0;
        for (int i = 0; i < n->n_gpus; i++)
            sum += isnan(caps[i]) ? n->snap[i].dev.limit_w : caps[i];
        int held = sum > gw; /* false when gw is NAN */
        pthread_mutex_lock(&n->mu);
        int was_held = n->mode == SRV_MODE_EXTERNAL && n->grid_binding;
        pthread_mutex_unlock(&n->mu);
        int o = snprintf(reason, sizeof reason, "caps from the cluster controller (epoch %lld)",
                         epoch);
        if (held)
            snprintf(reason + o, sizeof reason - o, ", held to grid event %s's %.0f W", gid, gw);
        n->deciding_epoch = epoch;
        rc = pfi_srv_decide(n, NAN, SRV_MODE_EXTERNAL, caps, reason, result, err);
        n->deciding_epoch = 0;
        if (rc == PFI_OK && held && !was_held)
            pfi_srv_event_add(n, "grid", "event %s, taken on this node, holds the controller's "
                              "caps (%.0f W) to %.0f W while it binds: post the site's events to "
                              "the controller, or delete it here", gid, sum, gw);
        if (rc == PFI_OK) {
            pthread_mutex_lock(&n->mu);
            if (epoch > 0)
                n->caps_epoch = epoch;
            for (int i = 0; i < n->n_gpus; i++)
                n->ext_caps[i] = intent[i];
            n->ramping = 0;
            pthread_mutex_unlock(&n->mu);
            if (result && *result)
                json_object_set_new(*result, "epoch", json_integer(epoch));
        }
    }
    pthread_mutex_unlock(&n->decide_mu);
    return rc;
}

double pfi_srv_controller_heard_s(const srv_node *n)
{
    return n->hb_controller[0] && n->hb_last > 0 ? pfi_clock_mono() - n->hb_last : NAN;
}

/* A second controller refused: said in the node's events when it is another one than the last
 * said, or ten minutes after (it is refused at every heartbeat). */
void pfi_srv_refused_controller(srv_node *n, const char *name)
{
    pthread_mutex_lock(&n->mu);
    double now = pfi_clock_mono();
    int say = strcmp(name, n->refused_ctl) != 0 || !(now - n->refused_ctl_at < 600);
    if (say) {
        snprintf(n->refused_ctl, sizeof n->refused_ctl, "%s", name);
        n->refused_ctl_at = now;
    }
    char by[sizeof n->hb_controller];
    snprintf(by, sizeof by, "%s", n->hb_controller);
    pthread_mutex_unlock(&n->mu);
    if (say)
        pfi_srv_event_add(n, "controller", "refused %s: this node's caps come from %s, heard "
                          "lately (two controllers over one node take turns over its caps)",
                          name, by);
}

int pfi_srv_other_controller(const srv_node *n, const char *name, pfi_err *err)
{
    double heard = pfi_srv_controller_heard_s(n);
    if (!name || !*name || n->mode != SRV_MODE_EXTERNAL || !(heard <= SRV_CONTROLLER_HEARD_S) ||
        !strcmp(name, n->hb_controller))
        return PFI_OK;
    return pfi_err_set(err, PFI_EBUSY, "held by controller %s (heard %.0f s ago): %s is a second "
                       "controller over this node, and two take turns over its caps, the site "
                       "over the lower budget at each turn; stop one of them (%s is taken once "
                       "%s has been silent for %d s)",
                       n->hb_controller, heard, name, name, n->hb_controller,
                       SRV_CONTROLLER_HEARD_S);
}

int pfi_srv_heartbeat(srv_node *n, const char *controller, double ttl_s, json_t **result,
                  pfi_err *err)
{
    if (isnan(ttl_s))
        ttl_s = n->cfg->watchdog_timeout_s;
    if (!(ttl_s >= 0 && ttl_s <= 86400))
        return pfi_err_set(err, PFI_EINVAL, "ttl_s: expected 0 to 86400 seconds");
    pthread_mutex_lock(&n->mu);
    if (pfi_srv_other_controller(n, controller, err) != PFI_OK) {
        pthread_mutex_unlock(&n->mu);
        pfi_srv_refused_controller(n, controller);
        return PFI_EBUSY;
    }
    int first = n->hb_ttl_s <= 0 && ttl_s > 0, disarmed = n->hb_ttl_s > 0 && ttl_s <= 0;
    int changed = n->hb_ttl_s != ttl_s;
    n->hb_last = pfi_clock_mono();
    n->hb_ttl_s = ttl_s;
    n->n_heartbeats++;
    snprintf(n->hb_controller, sizeof n->hb_controller, "%s", controller ? controller : "");
    int mode = n->mode;
    pthread_mutex_unlock(&n->mu);
    if (changed) {
        /* A restart comes back with the watchdog as it is now (hold.c): armed, with this ttl,
         * or disarmed (a disarm left unsaved came back armed after a crash and, with no
         * controller left to beat, dropped every GPU to the safe budget). */
        pthread_mutex_lock(&n->decide_mu);
        pfi_srv_hold_save(n, 0);
        pthread_mutex_unlock(&n->decide_mu);
    }
    const char *who = controller && *controller ? controller : "a controller";
    if (first)
        pfi_srv_event_add(n, "watchdog", "armed by %s: safe budget %s after %.1f s without a "
                                         "heartbeat",
                          who, n->cfg->safe_budget, ttl_s);
    if (disarmed)
        pfi_srv_event_add(n, "watchdog", "disarmed by %s (ttl_s 0)", who);
    if (result)
        *result = json_pack("{s:b, s:f, s:s, s:s}", "armed", ttl_s > 0, "ttl_s", ttl_s, "mode",
                            pfi_srv_mode_name(mode), "boot_id", n->boot_id);
    return PFI_OK;
}

/* ---- a restart's held state (hold.c keeps it) ---- */

int pfi_srv_hold_resume(srv_node *n, const srv_hold *h, pfi_err *err)
{
    int ramp_on = 0;
    pthread_mutex_lock(&n->decide_mu);
    pfi_srv_snapshot(n);
    double caps[PFI_MAX_GPUS];
    for (int i = 0; i < n->n_gpus; i++) {
        /* A GPU the hold does not name stays where it is (under a controller's caps, the
         * start put it at its minimum: daemon.c's unheld_to_min). */
        caps[i] = pfi_srv_hold_cap(h, &n->snap[i].dev, i);
        if (isnan(caps[i]))
            caps[i] = n->snap[i].dev.limit_w;
        if (caps[i] < n->snap[i].dev.min_limit_w)
            caps[i] = n->snap[i].dev.min_limit_w;
    }
    pthread_mutex_lock(&n->mu);
    n->caps_epoch = h->epoch;
    if (h->ttl_s > 0) {
        n->hb_ttl_s = h->ttl_s;
        n->hb_last = pfi_clock_mono(); /* the controller gets a full ttl to come back */
    }
    pthread_mutex_unlock(&n->mu);
    int rc;
    if (h->mode == SRV_MODE_EXTERNAL || isnan(h->budget_w)) {
        rc = pfi_srv_decide(n, NAN, SRV_MODE_EXTERNAL, caps, "restart: the caps held before",
                            NULL, err);
        if (rc == PFI_OK) {
            pthread_mutex_lock(&n->mu);
            memcpy(n->ext_caps, caps, sizeof caps[0] * (size_t)n->n_gpus);
            pthread_mutex_unlock(&n->mu);
        }
    } else {
        rc = pfi_srv_decide(n, h->budget_w, h->mode, NULL, "restart: the budget held before", NULL,
                            err);
        if (rc == PFI_OK && h->mode == SRV_MODE_LOCAL) {
            pthread_mutex_lock(&n->mu);
            n->manual_w = h->budget_w;
            pthread_mutex_unlock(&n->mu);
            ramp_on = isfinite(h->ramp_to_w);
        } else if (rc != PFI_OK) {
            /* The budget cannot be planned now (a job's SLA, a GPU gone): the caps held
             * stay, exactly, until someone decides otherwise. */
            pfi_srv_event_add(n, "hold", "the budget held before (%.0f W) cannot be planned: %s; "
                                         "its caps are held instead",
                              h->budget_w, err->msg);
            pfi_srv_snapshot(n);
            rc = pfi_srv_decide(n, NAN, SRV_MODE_EXTERNAL, caps, "restart: the caps held before",
                                NULL, err);
            if (rc == PFI_OK) {
                pthread_mutex_lock(&n->mu);
                memcpy(n->ext_caps, caps, sizeof caps[0] * (size_t)n->n_gpus);
                pthread_mutex_unlock(&n->mu);
            }
        }
    }
    pthread_mutex_unlock(&n->decide_mu);
    if (ramp_on) {
        /* The ramp goes on from the step it had reached to where the operator asked, over
         * what it had left: taking the step back as the budget left the node there for good,
         * shown as the operator's. */
        pfi_err re = {0};
        if (pfi_srv_budget_set(n, h->ramp_to_w, h->ramp_left_s, 1, NULL, &re) == PFI_OK)
            pfi_srv_event_add(n, "hold", "restart: the budget ramp to %.0f W goes on from %.0f W "
                                         "over the %.0f s it had left",
                              h->ramp_to_w, h->budget_w, h->ramp_left_s);
        else
            pfi_srv_event_add(n, "hold", "restart: the budget ramp to %.0f W cannot go on (%s); "
                                         "the %.0f W it had reached is held",
                              h->ramp_to_w, re.msg, h->budget_w);
    }
    return rc;
}

/* ---- the control loop's periodic work ---- */

/* Every periodic step below takes decide_mu, the lock every decision holds from reading the
 * state to committing it, and only then reads what it acts on (heartbeat, ramp, budget, mode).
 * A command answered before the step took the lock is therefore what the step sees: a step can
 * never bring back an older budget, mode or caps (a re-plan once read the budget outside
 * the lock and re-applied it after a newer one). */

static void watchdog_fire(srv_node *n)
{
    double w;
    pfi_err e = {0};
    if (pfi_srv_budget_parse(n, n->cfg->safe_budget, &w, &e) != PFI_OK) {
        pfi_srv_event_add(n, "watchdog", "bad safe_budget: %s", e.msg);
        return;
    }
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    int fire = n->hb_ttl_s > 0 && pfi_clock_mono() - n->hb_last > n->hb_ttl_s;
    pthread_mutex_unlock(&n->mu);
    if (!fire) { /* a heartbeat came in meanwhile */
        pthread_mutex_unlock(&n->decide_mu);
        return;
    }
    pfi_srv_snapshot(n);
    /* The safe state is reached whatever the SLAs say, and never below the GPUs' minimums;
     * the SLAs are the jobs' again after it. */
    double saved[SRV_MAX_JOBS];
    int n_saved = n->n_cand;
    pfi_srv_slas_aside(n, saved);
    /* Nor above the limits held now: the controller that went quiet (or cannot reach this
     * node) counts it at the caps it last acknowledged and spends the rest of the site's
     * budget elsewhere; a safe_budget of 60% raised a node held at 1600 W to 3360 W, the site
     * 1760 W over.  The node's sum never rises, and the plan applies lowerings first. */
    double floor = 0, held = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        const pfi_device *d = &n->snap[i].dev;
        floor += d->min_limit_w;
        double l = isfinite(d->limit_w) ? d->limit_w : d->max_limit_w;
        if (isfinite(d->enforced_w) && d->enforced_w > l)
            l = d->enforced_w;
        held += l;
    }
    double asked = w;
    if (isfinite(held) && w > held)
        w = held;
    if (w < floor)
        w = floor;
    int rc = pfi_srv_decide(n, w, SRV_MODE_SAFE, NULL, "watchdog: no heartbeat", NULL, &e);
    pfi_srv_slas_back(n, saved, n_saved);
    pthread_mutex_lock(&n->mu);
    n->ramping = 0;
    n->n_watchdog_trips++;
    n->hb_ttl_s = 0; /* disarmed until the controller is back */
    pthread_mutex_unlock(&n->mu);
    pthread_mutex_unlock(&n->decide_mu);
    if (rc == PFI_OK && w < asked)
        pfi_srv_event_add(n, "watchdog", "no heartbeat from %s: %.0f W applied, the limits it "
                          "held (the safe budget, %.0f W, is above them, and a safe budget never "
                          "raises a node its controller counts at its caps)",
                          n->hb_controller[0] ? n->hb_controller : "the controller", w, asked);
    else if (rc == PFI_OK)
        pfi_srv_event_add(n, "watchdog", "no heartbeat from %s: safe budget %.0f W applied",
                      n->hb_controller[0] ? n->hb_controller : "the controller", w);
    else
        pfi_srv_event_add(n, "watchdog", "safe budget %.0f W could not be applied: %s", w, e.msg);
}

/* One step of a ramp in progress (none when a command ended it meanwhile). */
static void ramp_step(srv_node *n)
{
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    int ramping = n->ramping;
    double rf = n->ramp_from_w, rt = n->ramp_to_w, r0 = n->ramp_t0, r1 = n->ramp_t1;
    pthread_mutex_unlock(&n->mu);
    if (!ramping) {
        pthread_mutex_unlock(&n->decide_mu);
        return;
    }
    double now = pfi_clock_mono();
    double f = r1 > r0 ? (now - r0) / (r1 - r0) : 1;
    double w = f >= 1 ? rt : rf + (rt - rf) * f;
    char ev[PFI_EVENT_ID_MAX];
    double g = pfi_srv_grid_limit(n, w, ev, sizeof ev); /* a grid event may hold it lower */
    if (!isnan(g))
        w = g;
    pfi_err e = {0};
    pfi_srv_snapshot(n);
    char reason[64];
    snprintf(reason, sizeof reason, "budget ramp at %.0f W", w);
    pthread_mutex_lock(&n->mu);
    n->hold_ramp = f < 1; /* the hold keeps a ramp that goes on after this step */
    pthread_mutex_unlock(&n->mu);
    int rc = pfi_srv_decide(n, w, SRV_MODE_LOCAL, NULL, reason, NULL, &e);
    pthread_mutex_lock(&n->mu);
    n->hold_ramp = 0;
    if (rc == PFI_OK) { /* an event holding the ramp lower sets the budget: it binds */
        n->grid_binding = ev[0] != 0;
        snprintf(n->grid_event, sizeof n->grid_event, "%s", ev);
    }
    pthread_mutex_unlock(&n->mu);
    if (f >= 1 || rc != PFI_OK) {
        pthread_mutex_lock(&n->mu);
        n->ramping = 0;
        pthread_mutex_unlock(&n->mu);
    }
    pthread_mutex_unlock(&n->decide_mu);
    if (rc != PFI_OK)
        pfi_srv_event_add(n, "ramp_failed", "budget ramp stopped at %.0f W: %s", w, e.msg);
}

/* Re-plans on what is now known of the jobs, under the budget and in the mode in force (read
 * here, under decide_mu: a re-plan never changes either), and applies only a change worth
 * making. */
static void replan_step(srv_node *n)
{
    pthread_mutex_lock(&n->decide_mu);
    pthread_mutex_lock(&n->mu);
    int mode = n->mode, ramping = n->ramping;
    double budget = n->budget_w;
    int rate_ok = pfi_clock_mono() - n->last_decision_mono >= n->cfg->min_change_interval_s;
    pthread_mutex_unlock(&n->mu);
    if (mode == SRV_MODE_EXTERNAL || ramping || isnan(budget) || !rate_ok) {
        pthread_mutex_unlock(&n->decide_mu);
        return;
    }
    pfi_err e = {0};
    pfi_srv_snapshot(n);
    srv_plan plan;
    int rc = pfi_srv_plan_compute(n->snap, n->n_gpus, n->cand, n->n_cand, budget, &n->keep, &plan,
                                  &e);
    if (rc != PFI_OK && strcmp(e.msg, n->replan_said) != 0) {
        /* e.g. SLA breaches seen under a budget that was tight before: the caps stay, and the
         * operator hears it once */
        pfi_srv_event_add(n, "replan_failed", "re-plan on updated curves: %s; caps left as they are",
                          e.msg);
        snprintf(n->replan_said, sizeof n->replan_said, "%s", e.msg);
    } else if (rc == PFI_OK)
        n->replan_said[0] = '\0';
    if (rc == PFI_OK) {
        double moved = 0;
        for (int i = 0; i < n->n_gpus; i++)
            if (!isnan(plan.target_w[i]) && fabs(plan.target_w[i] - n->snap[i].dev.limit_w) > moved)
                moved = fabs(plan.target_w[i] - n->snap[i].dev.limit_w);
        if (moved > n->cfg->hysteresis_w &&
            pfi_srv_decide(n, budget, mode, NULL, "re-plan on updated curves", NULL, &e) != PFI_OK)
            pfi_srv_event_add(n, "replan_failed", "%s", e.msg);
    }
    pthread_mutex_unlock(&n->decide_mu);
}

/* A lowering that failed is tried again after this long, not at every sample. */
#define OUTSIDE_RETRY_S 10.0

/* The first GPU whose limit, as last read, is above the cap this daemon holds it at, while
 * it holds one (a budget, a controller's caps, the safe budget); -1 when none (mu held).
 * Half a watt of slack: the limits are read back in milliwatts. */
static int raised_outside(const srv_node *n)
{
    if (n->mode == SRV_MODE_LOCAL && isnan(n->budget_w))
        return -1;
    for (int i = 0; i < n->n_gpus; i++) {
        const srv_gpu *g = &n->gpu[i];
        if (g->up && isfinite(g->requested_w) && isfinite(g->dev.limit_w) &&
            pfi_hw_held_mw(g->dev.limit_w) > pfi_hw_cap_mw(g->requested_w) + 500)
            return i;
    }
    return -1;
}

/* A limit raised behind the daemon's back (a GPU reset puts the default back; so do
 * nvidia-smi -pl and pfi restore --force) is lowered again at once, in every mode: the node
 * was over its budget until the next re-plan, and under a controller, which re-sends caps
 * only after a restart, for good. */
static void outside_step(srv_node *n)
{
    if (n->cfg->read_only)
        return;
    pthread_mutex_lock(&n->mu);
    int i = raised_outside(n);
    double now = pfi_clock_mono(), was = NAN, held = NAN;
    int due = i >= 0 && !(now - n->outside_fix_mono < OUTSIDE_RETRY_S);
    if (due) {
        n->outside_fix_mono = now;
        n->n_outside_raised++;
        was = n->gpu[i].dev.limit_w;
        held = n->gpu[i].requested_w;
    }
    pthread_mutex_unlock(&n->mu);
    if (!due)
        return;
    char reason[160];
    snprintf(reason, sizeof reason, "GPU %d's limit raised outside pfi to %.0f W, above the %.0f W "
             "it holds", i, was, held);
    pfi_err e = {0};
    pthread_mutex_lock(&n->decide_mu);
    pfi_srv_snapshot(n);
    int rc = pfi_srv_decide_now(n, reason, &e);
    pthread_mutex_unlock(&n->decide_mu);
    /* Said as it came out: a GPU that refuses the lowering is held around by the others (the
     * decision re-plans them), not "lowered back". */
    pthread_mutex_lock(&n->mu);
    double now_w = n->gpu[i].dev.limit_w;
    pthread_mutex_unlock(&n->mu);
    if (rc != PFI_OK)
        pfi_srv_event_add(n, "limit_raised", "%s (a GPU reset, nvidia-smi -pl, pfi restore "
                          "--force): not lowered back: %s; tried again in %.0f s",
                          reason, e.msg, OUTSIDE_RETRY_S);
    else if (pfi_hw_held_mw(now_w) > pfi_hw_cap_mw(held) + 500)
        pfi_srv_event_add(n, "limit_raised", "%s (a GPU reset, nvidia-smi -pl, pfi restore "
                          "--force): the GPU refused the lowering and holds %.0f W (the others "
                          "were planned around it); tried again in %.0f s",
                          reason, now_w, OUTSIDE_RETRY_S);
    else
        pfi_srv_event_add(n, "limit_raised", "%s (a GPU reset, nvidia-smi -pl, pfi restore "
                          "--force): lowered back", reason);
}

void pfi_srv_tick(srv_node *n)
{
    double now = pfi_clock_mono();
    pthread_mutex_lock(&n->mu);
    int fire = n->hb_ttl_s > 0 && now - n->hb_last > n->hb_ttl_s;
    int ramping = n->ramping;
    int replan = !fire && !ramping && now - n->last_replan_mono >= n->cfg->reoptimize_interval_s;
    if (replan)
        n->last_replan_mono = now;
    pthread_mutex_unlock(&n->mu);
    if (fire) {
        watchdog_fire(n);
        return;
    }
    outside_step(n);
    if (pfi_srv_grid_tick(n))
        return;
    if (ramping) {
        ramp_step(n);
        return;
    }
    pfi_srv_probe_tick(n);
    if (!replan)
        return;
    pfi_srv_predict_curves(n); /* also without a budget: the PFI is reported either way */
    replan_step(n);
}

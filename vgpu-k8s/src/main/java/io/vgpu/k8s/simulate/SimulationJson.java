package io.vgpu.k8s.simulate;

import io.vgpu.api.DeviceGrant;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodRef;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.Explanation;
import io.vgpu.core.QuotaLimits;
import io.vgpu.core.QuotaUsage;
import io.vgpu.core.queue.QueueResource;
import io.vgpu.core.queue.QueueShare;
import io.vgpu.k8s.simulate.SimulationResult.ContainerOutcome;
import io.vgpu.k8s.simulate.SimulationResult.DeviceOutcome;
import io.vgpu.k8s.simulate.SimulationResult.NodeOutcome;
import io.vgpu.k8s.simulate.SimulationResult.PodOutcome;
import io.vgpu.k8s.simulate.SimulationResult.Step;
import java.util.List;
import java.util.Map;
import tools.jackson.core.util.DefaultIndenter;
import tools.jackson.core.util.DefaultPrettyPrinter;
import tools.jackson.core.util.Separators;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectWriter;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The JSON output of {@code vgpu simulate --output json} and of {@code --explain}, field for field as
 * {@code SCENARIO.md} defines it (plus fields it allows adding: {@code type}, {@code index}, {@code
 * numa}, {@code health}, {@code cordoned} per device, {@code initContainers}, {@code quotas}, and per
 * explained node its {@code reason}).
 */
public final class SimulationJson {
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  private static final ObjectWriter PRETTY = prettyWriter();

  private SimulationJson() {}

  private static ObjectWriter prettyWriter() {
    DefaultIndenter indenter = new DefaultIndenter("  ", "\n");
    DefaultPrettyPrinter printer =
        new DefaultPrettyPrinter(
                Separators.createDefaultInstance()
                    .withObjectNameValueSpacing(Separators.Spacing.AFTER)
                    .withObjectEmptySeparator("")
                    .withArrayEmptySeparator(""))
            .withObjectIndenter(indenter)
            .withArrayIndenter(indenter);
    return JsonMapper.builder().build().writer().with(printer);
  }

  /** Writes a tree as indented JSON with a final newline. */
  public static String pretty(JsonNode node) {
    return PRETTY.writeValueAsString(node) + "\n";
  }

  /** The simulation's final state. */
  public static ObjectNode result(SimulationResult result) {
    ObjectNode root = NODES.objectNode();
    ArrayNode pods = root.putArray("pods");
    result.pods().forEach(p -> pods.add(pod(p)));
    ArrayNode timeline = root.putArray("timeline");
    result.timeline().forEach(s -> timeline.add(step(s)));
    ArrayNode nodes = root.putArray("nodes");
    result.nodes().forEach(n -> nodes.add(node(n)));
    if (!result.quotas().isEmpty()) {
      ArrayNode quotas = root.putArray("quotas");
      result.quotas().forEach(q -> quotas.add(quota(q)));
    }
    if (!result.queues().isEmpty()) {
      ArrayNode queues = root.putArray("queues");
      result.queues().forEach(q -> queues.add(queue(q)));
    }
    return root;
  }

  /**
   * One entry of {@code queues} (SCENARIO.md): name, parent (null: none) and per resource deserved,
   * requested, allocated, fairShare and maxAllowed (null: unlimited), as JSON numbers rounded to 2
   * decimals. The lab's reports write the same shape.
   */
  public static ObjectNode queue(SimulationResult.QueueOutcome q) {
    ObjectNode out = NODES.objectNode();
    out.put("name", q.name());
    if (q.parent().isPresent()) {
      out.put("parent", q.parent().get());
    } else {
      out.putNull("parent");
    }
    for (QueueResource r : QueueResource.values()) {
      QueueShare share = q.shares().get(r);
      ObjectNode terms = out.putObject(r.key());
      terms.put("deserved", twoDecimals(share.deserved()));
      terms.put("requested", twoDecimals(share.requested()));
      terms.put("allocated", twoDecimals(share.allocated()));
      terms.put("fairShare", twoDecimals(share.fairShare()));
      if (share.unlimited()) {
        terms.putNull("maxAllowed");
      } else {
        terms.put("maxAllowed", twoDecimals(share.maxAllowed()));
      }
    }
    return out;
  }

  /** A JSON number rounded half up to two decimals, without trailing zeros. */
  private static java.math.BigDecimal twoDecimals(double value) {
    java.math.BigDecimal rounded = java.math.BigDecimal.valueOf(value).setScale(2, java.math.RoundingMode.HALF_UP).stripTrailingZeros();
    return rounded.scale() < 0 ? rounded.setScale(0) : rounded;
  }

  private static ObjectNode pod(PodOutcome p) {
    ObjectNode out = NODES.objectNode();
    out.put("namespace", p.pod().namespace());
    out.put("name", p.pod().name());
    out.put("phase", p.phase().word());
    if (!p.node().isEmpty()) {
      out.put("node", p.node());
    }
    if (!p.annotations().isEmpty()) {
      out.set("annotations", strings(p.annotations()));
    }
    if (!p.initContainers().isEmpty()) {
      ArrayNode init = out.putArray("initContainers");
      p.initContainers().forEach(c -> init.add(container(c)));
    }
    if (p.phase() == Phase.RUNNING) {
      ArrayNode containers = out.putArray("containers");
      p.containers().forEach(c -> containers.add(container(c)));
    }
    if (!p.reasons().isEmpty()) {
      out.set("reasons", strings(p.reasons()));
    }
    if (!p.message().isEmpty()) {
      out.put("message", p.message());
    }
    p.waiting().ifPresent(w -> {
      ObjectNode waiting = out.putObject("waiting");
      waiting.put("reason", w.reason().word());
      waiting.put("message", w.message());
    });
    if (p.gpuPortion().isPresent()) {
      out.put("gpuPortion", java.math.BigDecimal.valueOf(p.gpuPortion().getAsInt(), 2));
    }
    return out;
  }

  private static ObjectNode container(ContainerOutcome c) {
    ObjectNode out = NODES.objectNode();
    out.put("name", c.name());
    out.set("devices", grants(c.devices()));
    if (!c.env().isEmpty()) {
      out.set("env", strings(c.env()));
    }
    return out;
  }

  /** A container's {@code devices}: uuid, memoryMiB and cores of each granted card, in its order. */
  public static ArrayNode grants(List<DeviceGrant> devices) {
    ArrayNode out = NODES.arrayNode();
    for (DeviceGrant d : devices) {
      ObjectNode g = out.addObject();
      g.put("uuid", d.uuid());
      g.put("memoryMiB", d.memoryMiB());
      g.put("cores", d.cores());
    }
    return out;
  }

  private static ObjectNode step(Step s) {
    ObjectNode out = NODES.objectNode();
    out.put("step", s.step());
    out.put("event", s.event());
    out.set("scheduled", refs(s.scheduled()));
    return out;
  }

  /** One node of the {@code nodes} section: its devices' capacity and usage. */
  public static ObjectNode node(NodeOutcome n) {
    ObjectNode out = NODES.objectNode();
    out.put("name", n.name());
    ArrayNode devices = out.putArray("devices");
    for (DeviceOutcome d : n.devices()) {
      DeviceUsage u = d.usage();
      ObjectNode dev = devices.addObject();
      dev.put("uuid", u.device().uuid());
      dev.put("index", u.device().index());
      dev.put("model", d.model());
      dev.put("type", u.device().type());
      dev.put("memoryMiB", u.device().memoryMiB());
      dev.put("cores", u.device().cores());
      dev.put("splitCount", u.device().splitCount());
      dev.put("numa", u.device().numa());
      dev.put("health", u.device().healthy());
      dev.put("cordoned", u.cordoned());
      dev.put("usedMemoryMiB", u.usedMemoryMiB());
      dev.put("usedCores", u.usedCores());
      dev.put("sharers", u.sharers());
    }
    return out;
  }

  private static ObjectNode quota(QuotaUsage q) {
    ObjectNode out = NODES.objectNode();
    out.put("namespace", q.namespace());
    if (q.limits().memoryMiB() != QuotaLimits.UNLIMITED) {
      out.put("limitMemoryMiB", q.limits().memoryMiB());
    }
    if (q.limits().cores() != QuotaLimits.UNLIMITED) {
      out.put("limitCores", q.limits().cores());
    }
    out.put("usedMemoryMiB", q.usedMemoryMiB());
    out.put("usedCores", q.usedCores());
    return out;
  }

  /** The {@code --explain} answer for one pod. */
  public static ObjectNode explanation(PodExplanation e) {
    ObjectNode root = NODES.objectNode();
    root.put("pod", e.pod().toString());
    root.put("phase", e.phase().word());
    if (!e.message().isEmpty()) {
      root.put("message", e.message());
    }
    ArrayNode nodes = root.putArray("nodes");
    for (PodExplanation.NodeVerdict v : e.nodes()) {
      ObjectNode node = nodes.addObject();
      node.put("name", v.node());
      node.put("fits", v.fits());
      if (v.fits()) {
        node.set("cards", grants(v.chosen()));
        continue;
      }
      node.put("reason", v.reason());
      ArrayNode cards = node.putArray("cards");
      for (Explanation.CardExplanation c : v.cards()) {
        ObjectNode card = cards.addObject();
        card.put("uuid", c.uuid());
        ArrayNode reasons = card.putArray("reasons");
        c.reasons().stream().map(FitReason::word).forEach(reasons::add);
        ObjectNode shortBy = card.putObject("shortBy");
        shortBy.put("memoryMiB", c.shortBy().memoryMiB());
        shortBy.put("cores", c.shortBy().cores());
        shortBy.put("sharers", c.shortBy().sharers());
        card.set("heldBy", refs(c.heldBy()));
      }
    }
    e.nearest().ifPresent(n -> {
      ObjectNode nearest = root.putObject("nearest");
      nearest.put("node", n.node());
      ArrayNode cards = nearest.putArray("cards");
      n.cards().forEach(cards::add);
      nearest.put("change", n.change());
      nearest.put("cost", n.cost());
    });
    return root;
  }

  private static ObjectNode strings(Map<String, String> values) {
    ObjectNode out = NODES.objectNode();
    values.forEach(out::put);
    return out;
  }

  private static ArrayNode refs(List<PodRef> pods) {
    ArrayNode out = NODES.arrayNode();
    pods.forEach(p -> out.add(p.toString()));
    return out;
  }
}

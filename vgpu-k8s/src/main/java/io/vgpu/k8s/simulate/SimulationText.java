package io.vgpu.k8s.simulate;

import io.vgpu.api.DeviceGrant;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodRef;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.Explanation;
import io.vgpu.core.QuotaLimits;
import io.vgpu.core.QuotaUsage;
import io.vgpu.k8s.simulate.SimulationResult.ContainerOutcome;
import io.vgpu.k8s.simulate.SimulationResult.DeviceOutcome;
import io.vgpu.k8s.simulate.SimulationResult.NodeOutcome;
import io.vgpu.k8s.simulate.SimulationResult.PodOutcome;
import io.vgpu.k8s.simulate.SimulationResult.Step;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/** The readable form of {@code vgpu simulate}'s output: the same content as the JSON, as tables. */
public final class SimulationText {
  private SimulationText() {}

  /** The simulation's final state as tables: pods, the containers' env (with a contract), timeline, nodes and quotas. */
  public static String result(SimulationResult result) {
    StringBuilder out = new StringBuilder();
    TextTable pods = new TextTable("NAMESPACE", "NAME", "PHASE", "NODE", "DETAILS");
    for (PodOutcome p : result.pods()) {
      pods.row(p.pod().namespace(), p.pod().name(), p.phase().word(), p.node().isEmpty() ? "-" : p.node(), details(p));
    }
    out.append("PODS\n").append(pods.render(""));
    TextTable env = new TextTable("POD", "CONTAINER", "ENV");
    boolean anyEnv = false;
    for (PodOutcome p : result.pods()) {
      for (ContainerOutcome c : concat(p.initContainers(), p.containers())) {
        c.env().forEach((key, value) -> env.row(p.pod().toString(), c.name(), key + "=" + value));
        anyEnv |= !c.env().isEmpty();
      }
    }
    if (anyEnv) {
      out.append("\nCONTAINER ENV\n").append(env.render(""));
    }
    TextTable timeline = new TextTable("STEP", "EVENT", "SCHEDULED");
    for (Step s : result.timeline()) {
      timeline.row(Integer.toString(s.step()), s.event(), s.scheduled().isEmpty() ? "-" : refs(s.scheduled()));
    }
    out.append("\nTIMELINE\n").append(timeline.render(""));
    TextTable nodes = new TextTable("NODE", "UUID", "TYPE", "MEMORY MiB", "CORES", "SHARERS", "STATE");
    for (NodeOutcome n : result.nodes()) {
      if (n.devices().isEmpty()) {
        nodes.row(n.name(), "-", "-", "-", "-", "-", "no GPU registered");
      }
      for (DeviceOutcome d : n.devices()) {
        DeviceUsage u = d.usage();
        nodes.row(
            n.name(),
            u.device().uuid(),
            u.device().type(),
            u.usedMemoryMiB() + "/" + u.device().memoryMiB(),
            u.usedCores() + "/" + u.device().cores(),
            u.sharers() + "/" + u.device().splitCount(),
            state(u));
      }
    }
    out.append("\nNODES\n").append(nodes.render(""));
    if (!result.quotas().isEmpty()) {
      TextTable quotas = new TextTable("NAMESPACE", "MEMORY MiB", "CORES");
      for (QuotaUsage q : result.quotas()) {
        quotas.row(q.namespace(), usedOf(q.usedMemoryMiB(), q.limits().memoryMiB()), usedOf(q.usedCores(), q.limits().cores()));
      }
      out.append("\nQUOTAS\n").append(quotas.render(""));
    }
    if (!result.queues().isEmpty()) {
      TextTable queues = new TextTable("QUEUE", "PARENT", "GPU DESERVED", "GPU REQUESTED", "GPU ALLOCATED", "GPU FAIR SHARE", "GPU LIMIT");
      for (SimulationResult.QueueOutcome q : result.queues()) {
        io.vgpu.core.queue.QueueShare gpu = q.shares().get(io.vgpu.core.queue.QueueResource.GPU);
        queues.row(q.name(), q.parent().orElse("-"), cards(gpu.deserved()), cards(gpu.requested()), cards(gpu.allocated()),
            cards(gpu.fairShare()), gpu.unlimited() ? "none" : cards(gpu.maxAllowed()));
      }
      out.append("\nQUEUES\n").append(queues.render(""));
    }
    return out.toString();
  }

  private static String details(PodOutcome p) {
    return switch (p.phase()) {
      case RUNNING -> {
        List<String> parts = new ArrayList<>();
        for (ContainerOutcome c : concat(p.initContainers(), p.containers())) {
          if (!c.devices().isEmpty()) {
            parts.add(c.name() + ": " + c.devices().stream().map(SimulationText::grant).collect(Collectors.joining(", ")));
          }
        }
        yield parts.isEmpty() ? "no GPU" : String.join("; ", parts);
      }
      case PENDING -> {
        List<String> parts = new ArrayList<>();
        p.waiting().ifPresent(w -> parts.add(w.reason().word() + ": " + w.message()));
        p.reasons().forEach((node, reason) -> parts.add(node + ": " + reason));
        if (!p.message().isEmpty()) {
          parts.add(p.message());
        }
        yield String.join("; ", parts);
      }
      case REJECTED -> p.message();
    };
  }

  private static String cards(double value) {
    return String.format(java.util.Locale.ROOT, "%.2f", value);
  }

  private static List<ContainerOutcome> concat(List<ContainerOutcome> a, List<ContainerOutcome> b) {
    List<ContainerOutcome> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  private static String grant(DeviceGrant d) {
    return d.uuid() + " " + d.memoryMiB() + " MiB " + d.cores() + " cores";
  }

  private static String state(DeviceUsage u) {
    List<String> flags = new ArrayList<>();
    if (!u.device().healthy()) {
      flags.add("unhealthy");
    }
    if (u.cordoned()) {
      flags.add("cordoned");
    }
    return flags.isEmpty() ? "ok" : String.join(",", flags);
  }

  private static String usedOf(long used, long limit) {
    return used + "/" + (limit == QuotaLimits.UNLIMITED ? "-" : Long.toString(limit));
  }

  private static String refs(List<PodRef> pods) {
    return pods.stream().map(PodRef::toString).collect(Collectors.joining(", "));
  }

  /** An explanation as text: one block per node, its cards as a table, then the nearest fix. */
  public static String explanation(PodExplanation e) {
    StringBuilder out = new StringBuilder();
    out.append("POD ").append(e.pod()).append(" (").append(e.phase().word()).append(")\n");
    if (!e.message().isEmpty()) {
      out.append(e.message()).append('\n');
    }
    for (PodExplanation.NodeVerdict v : e.nodes()) {
      out.append('\n').append("NODE ").append(v.node()).append(": ");
      if (v.fits()) {
        out.append("fits, would get ")
            .append(v.chosen().isEmpty() ? "no GPU" : v.chosen().stream().map(SimulationText::grant).collect(Collectors.joining(", ")))
            .append('\n');
        continue;
      }
      out.append(v.reason()).append('\n');
      if (v.cards().isEmpty()) {
        continue;
      }
      TextTable cards = new TextTable("CARD", "FAILS", "SHORT BY", "HELD BY");
      for (Explanation.CardExplanation c : v.cards()) {
        cards.row(
            c.uuid(),
            c.reasons().isEmpty() ? "-" : c.reasons().stream().map(FitReason::word).collect(Collectors.joining(", ")),
            shortBy(c.shortBy()),
            c.heldBy().isEmpty() ? "-" : refs(c.heldBy()));
      }
      out.append(cards.render("  "));
    }
    e.nearest().ifPresent(n -> out.append("\nNEAREST ").append(n.node()).append(": ").append(n.change()).append('\n'));
    return out.toString();
  }

  private static String shortBy(Explanation.Shortfall s) {
    if (s.isNone()) {
      return "-";
    }
    List<String> parts = new ArrayList<>();
    if (s.memoryMiB() > 0) {
      parts.add(s.memoryMiB() + " MiB");
    }
    if (s.cores() > 0) {
      parts.add(s.cores() + " cores");
    }
    if (s.sharers() > 0) {
      parts.add(s.sharers() + " sharers");
    }
    return String.join(", ", parts);
  }
}

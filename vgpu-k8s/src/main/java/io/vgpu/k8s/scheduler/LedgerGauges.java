package io.vgpu.k8s.scheduler;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.ResourceSchema;
import io.vgpu.core.DeviceUsage;
import io.vgpu.core.Engine;
import io.vgpu.core.NodeUsage;
import io.vgpu.core.QuotaLimits;
import io.vgpu.core.QuotaUsage;
import io.vgpu.k8s.server.TextExposition;
import io.vgpu.k8s.server.TextExposition.Family;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;
import org.jspecify.annotations.Nullable;

/**
 * HAMi's ledger gauges with HAMi's names, help and labels (each point carrying HAMi's constant label
 * {@code zone="vGPU"}), written from the engine at scrape time straight into the text format, each
 * family's points sorted by their label values as the client library sorts them. A family with no
 * point is left out, as the client library leaves out an empty one.
 */
final class LedgerGauges {
  private static final double MIB = 1024.0 * 1024.0;
  private static final String ZONE = "vGPU";

  // Label names sorted, as the text format writes them.
  private static final String[] CARD = {"device_index", "device_type", "device_uuid", "node", "zone"};
  private static final String[] CARD_CORES = {"device_cores", "device_index", "device_type", "device_uuid", "node", "zone"};
  private static final String[] CARD_OVERVIEW = {"device_cores", "device_index", "device_memory_limit", "device_type", "device_uuid", "node", "zone"};
  private static final String[] LEGACY_CARD = {"deviceidx", "devicetype", "deviceuuid", "nodeid", "zone"};
  private static final String[] LEGACY_CARD_CORES = {"devicecores", "deviceidx", "devicetype", "deviceuuid", "nodeid", "zone"};
  private static final String[] CONTAINER_CARD = {"container_index", "device_uuid", "namespace", "node", "pod", "zone"};

  private static final List<CardGauge> HAMI_CARDS = List.of(
      card("hami_gpu_memory_limit_bytes", "Device memory limit for a certain GPU", CARD, d -> d.device().memoryMiB() * MIB),
      card("hami_gpu_core_limit_ratio", "Device core limit for a certain GPU", CARD, d -> d.device().cores()),
      card("hami_gpu_memory_allocated_bytes", "Device memory allocated for a certain GPU", CARD_CORES, d -> d.usedMemoryMiB() * MIB),
      card("hami_gpu_shared_count", "Number of containers sharing this GPU", CARD, DeviceUsage::sharers),
      card("hami_gpu_core_allocated_ratio", "Device core allocated for a certain GPU", CARD, DeviceUsage::usedCores),
      card("hami_node_gpu_overview", "GPU overview on a certain node", CARD_OVERVIEW, d -> d.usedMemoryMiB() * MIB),
      new CardGauge(new Family("hami_node_gpu_memory_allocated_ratio", "GPU Memory Allocated Percentage on a certain GPU", CARD), CARD,
          d -> (double) d.usedMemoryMiB() / d.device().memoryMiB(), d -> d.device().memoryMiB() > 0));
  private static final List<CardGauge> LEGACY_CARDS = List.of(
      card("GPUDeviceMemoryLimit", "Device memory limit for a certain GPU", LEGACY_CARD, d -> d.device().memoryMiB() * MIB),
      card("GPUDeviceCoreLimit", "Device memory core limit for a certain GPU", LEGACY_CARD, d -> d.device().cores()),
      card("GPUDeviceMemoryAllocated", "Device memory allocated for a certain GPU", LEGACY_CARD_CORES, d -> d.usedMemoryMiB() * MIB),
      card("GPUDeviceSharedNum", "Number of containers sharing this GPU", LEGACY_CARD, DeviceUsage::sharers),
      card("GPUDeviceCoreAllocated", "Device core allocated for a certain GPU", LEGACY_CARD, DeviceUsage::usedCores));
  private static final Family QUOTA_USED = new Family("hami_resource_quota_used", "resourcequota usage for a certain device", "limit", "namespace", "quota_name", "zone");
  private static final Family QUOTA_LIMIT = new Family("hami_resource_quota_limit", "resourcequota limit for a certain device", "namespace", "quota_name", "zone");
  private static final Family CONTAINER_MEMORY = new Family("hami_vgpu_memory_allocated_bytes", "vGPU memory allocated from a container", CONTAINER_CARD);
  private static final Family CONTAINER_CORES = new Family("hami_vgpu_core_allocated_ratio", "vGPU core allocated from a container", CONTAINER_CARD);

  /** A per-card family: the layout of its labels, what it reads from a card, and which cards it has a point for. */
  private record CardGauge(Family family, String[] layout, ToDoubleFunction<DeviceUsage> value, Predicate<DeviceUsage> shown) {}

  private static CardGauge card(String name, String help, String[] layout, ToDoubleFunction<DeviceUsage> value) {
    return new CardGauge(new Family(name, help, layout), layout, value, d -> true);
  }

  private static final Comparator<Row> BY_LABELS = (a, b) -> Arrays.compare(a.labels, b.labels);

  private final Engine engine;
  private final List<Family> families;
  private final Map<Family, CardGauge> cards = new IdentityHashMap<>();

  /** The gauges of {@code engine}'s ledger; with {@code legacy}, HAMi's pre-2.5 names too. */
  LedgerGauges(Engine engine, boolean legacy) {
    this.engine = engine;
    HAMI_CARDS.forEach(g -> cards.put(g.family(), g));
    if (legacy) {
      LEGACY_CARDS.forEach(g -> cards.put(g.family(), g));
    }
    List<Family> all = new ArrayList<>(cards.keySet());
    all.addAll(List.of(QUOTA_USED, QUOTA_LIMIT, CONTAINER_MEMORY, CONTAINER_CORES));
    all.sort(Comparator.comparing(Family::name));
    this.families = List.copyOf(all);
  }

  /** The families, sorted by name as the client library sorts a registry's families. */
  List<Family> families() {
    return families;
  }

  /** One scrape's reading of the ledger: the engine's usage, quotas and grants as they are now. */
  Reading read() {
    return new Reading(engine.usage(), engine.quotas(), engine.grants(), engine.config().schema());
  }

  /** Writes {@code family} (one of {@link #families}) from {@code reading}. */
  void write(Family family, Reading reading, TextExposition out) {
    CardGauge card = cards.get(family);
    List<Row> rows;
    if (card != null) {
      rows = reading.cards(card.layout());
    } else if (family == QUOTA_USED || family == QUOTA_LIMIT) {
      rows = quotas(family, reading);
    } else {
      rows = containers(family, reading.grants);
    }
    boolean begun = false;
    for (Row row : rows) {
      if (card != null && !card.shown().test(row.card)) {
        continue;
      }
      if (!begun) {
        out.begin(family);
        begun = true;
      }
      out.gauge(family, card != null ? card.value().applyAsDouble(row.card) : row.value, row.labels);
    }
  }

  private static List<Row> quotas(Family family, Reading reading) {
    List<Row> rows = new ArrayList<>();
    for (QuotaUsage q : reading.quotas) {
      quota(rows, family, q.namespace(), reading.schema.memoryResource(), q.limits().memoryMiB(), q.usedMemoryMiB());
      quota(rows, family, q.namespace(), reading.schema.coresResource(), q.limits().cores(), q.usedCores());
    }
    rows.sort(BY_LABELS);
    return rows;
  }

  private static void quota(List<Row> rows, Family family, String namespace, String resource, long limit, long used) {
    if (limit == QuotaLimits.UNLIMITED && used == 0) {
      return;
    }
    if (family == QUOTA_USED) {
      rows.add(new Row(new String[] {limit == QuotaLimits.UNLIMITED ? "0" : Long.toString(limit), namespace, resource, ZONE}, used, null));
    } else if (limit != QuotaLimits.UNLIMITED) {
      rows.add(new Row(new String[] {namespace, resource, ZONE}, limit, null));
    }
  }

  private static List<Row> containers(Family family, List<PodGrant> grants) {
    List<Row> rows = new ArrayList<>();
    for (PodGrant grant : grants) {
      List<ContainerGrant> containers = grant.allContainers();
      for (int c = 0; c < containers.size(); c++) {
        for (DeviceGrant d : containers.get(c).devices()) {
          String[] labels = {Integer.toString(c), d.uuid(), grant.pod().namespace(), grant.node(), grant.pod().name(), ZONE};
          rows.add(new Row(labels, family == CONTAINER_MEMORY ? d.memoryMiB() * MIB : d.cores(), null));
        }
      }
    }
    rows.sort(BY_LABELS);
    return rows;
  }

  /** One point's label values (in its family's label order), and its value or the card it is read from. */
  private record Row(String[] labels, double value, @Nullable DeviceUsage card) {}

  /** What one scrape writes from; the cards' rows are sorted once per label layout, for all its families. */
  static final class Reading {
    private final List<NodeUsage> usage;
    private final List<QuotaUsage> quotas;
    private final List<PodGrant> grants;
    private final ResourceSchema schema;
    private final Map<String[], List<Row>> cardRows = new IdentityHashMap<>();

    Reading(List<NodeUsage> usage, List<QuotaUsage> quotas, List<PodGrant> grants, ResourceSchema schema) {
      this.usage = usage;
      this.quotas = quotas;
      this.grants = grants;
      this.schema = schema;
    }

    List<Row> cards(String[] layout) {
      return cardRows.computeIfAbsent(layout, this::sortedCards);
    }

    private List<Row> sortedCards(String[] layout) {
      List<Row> rows = new ArrayList<>();
      for (NodeUsage node : usage) {
        for (DeviceUsage d : node.devices()) {
          String[] labels = new String[layout.length];
          for (int i = 0; i < layout.length; i++) {
            labels[i] = label(layout[i], node, d);
          }
          rows.add(new Row(labels, 0, d));
        }
      }
      rows.sort(BY_LABELS);
      return rows;
    }

    private static String label(String name, NodeUsage node, DeviceUsage d) {
      return switch (name) {
        case "node", "nodeid" -> node.node();
        case "device_uuid", "deviceuuid" -> d.device().uuid();
        case "device_index", "deviceidx" -> Integer.toString(d.device().index());
        case "device_type", "devicetype" -> d.device().type();
        case "device_cores", "devicecores" -> Integer.toString(d.device().cores());
        case "device_memory_limit" -> Integer.toString(d.device().memoryMiB());
        case "zone" -> ZONE;
        default -> throw new IllegalStateException("no card label " + name);
      };
    }
  }
}

package io.vgpu.nvidia;

import io.vgpu.api.Device;
import io.vgpu.api.spi.DeviceSource;
import io.vgpu.api.spi.DeviceSourceException;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The node's NVIDIA GPUs, read through NVML: the {@code nvml} device source. Identity, memory, NUMA
 * node and PCI bus id are read once when the source is created; health changes afterwards.
 *
 * <p>Values follow HAMi's device plugin: the index is NVML's ({@link NvmlDevice#index()}), memory is
 * NVML's total in whole MiB ({@code preConfiguredDeviceMemory} for GPUs that report none), the NUMA
 * node comes from sysfs ({@code <sysfs>/bus/pci/devices/<bus id>/numa_node}) and else from NVML, else 0.
 * A GPU whose memory cannot be read because it fell off the bus starts unhealthy with 0 MiB (so it is
 * not registered); one whose identity (UUID, index, name, PCI) cannot be read is left out, as HAMi
 * does. Registration values (scaling, type, split count) are {@code io.vgpu.core.DeviceRegistrar}'s
 * business, not the source's.
 *
 * <p>Health: {@link #watchHealth} starts one thread that waits on an NVML event set for Xid critical
 * errors (1 s at a time) and marks a GPU unhealthy on any Xid its {@link XidHealthPolicy} does not
 * ignore, or when the GPU cannot be registered for events. As in HAMi, a failed wait marks every GPU
 * unhealthy, and there is no way back to healthy short of a new source.
 *
 * <p>A GPU that has fallen off the bus (NVML answers {@code NVML_ERROR_GPU_IS_LOST} about its state,
 * checked at start and after each critical Xid) is also {@linkplain #lostDevices() lost}: still listed,
 * unhealthy, but no longer there to offer.
 */
public final class NvidiaDeviceSource implements DeviceSource {
  /** The source's name, as {@code --source nvml} selects it. */
  public static final String NAME = "nvml";

  private static final System.Logger LOG = System.getLogger(NvidiaDeviceSource.class.getName());
  private static final int HEALTH_WAIT_MILLIS = 1000;

  private final Nvml nvml;
  private final XidHealthPolicy xidPolicy;
  private final List<Gpu> gpus;
  private final List<Consumer<List<Device>>> listeners = new CopyOnWriteArrayList<>();
  private @Nullable HealthWatcher watcher;
  private boolean closed;

  /** One GPU: its handle, what was read at start, and its health now. */
  private static final class Gpu {
    final NvmlDevice handle;
    final Device device;
    final OptionalInt minorNumber;
    volatile boolean healthy;
    volatile boolean lost;

    Gpu(NvmlDevice handle, Device device, OptionalInt minorNumber, boolean lost) {
      this.handle = handle;
      this.device = device;
      this.minorNumber = minorNumber;
      this.healthy = device.healthy();
      this.lost = lost;
    }
  }

  /**
   * Options of the source.
   *
   * @param excludedUuids GPUs not to offer, by UUID (HAMi's {@code filterdevices.uuid})
   * @param excludedIndexes GPUs not to offer, by NVML index (HAMi's {@code filterdevices.index})
   * @param preConfiguredMemoryMiB memory of GPUs that report none (unified memory), 0 to report 0
   * @param sysfs where sysfs is mounted, {@code /sys} on a node, e.g. {@code /host/sys} in a container
   * @param xidPolicy which Xid errors make a GPU unhealthy
   */
  public record Options(
      Set<String> excludedUuids, Set<Integer> excludedIndexes, long preConfiguredMemoryMiB, Path sysfs, XidHealthPolicy xidPolicy) {

    /** No exclusion, no pre-configured memory, {@code /sys}, HAMi's default Xid policy. */
    public static final Options DEFAULT = new Options(Set.of(), Set.of(), 0, Path.of("/sys"), XidHealthPolicy.defaults());

    /** Copies the sets and validates the fields. */
    public Options {
      excludedUuids = Set.copyOf(excludedUuids);
      excludedIndexes = Set.copyOf(excludedIndexes);
      Objects.requireNonNull(sysfs, "sysfs");
      Objects.requireNonNull(xidPolicy, "xidPolicy");
      if (preConfiguredMemoryMiB < 0) {
        throw new IllegalArgumentException("preConfiguredDeviceMemory " + preConfiguredMemoryMiB + " must not be negative");
      }
    }
  }

  /**
   * Reads the GPUs of an open NVML; the source owns {@code nvml} from now on and closes it.
   *
   * @throws NvmlException when NVML cannot list the GPUs
   */
  public NvidiaDeviceSource(Nvml nvml, Options options) {
    this.nvml = nvml;
    this.xidPolicy = options.xidPolicy();
    List<Gpu> found = new ArrayList<>();
    for (NvmlDevice handle : nvml.devices()) {
      try {
        String uuid = handle.uuid();
        int index = handle.index();
        if (!options.excludedUuids().contains(uuid) && !options.excludedIndexes().contains(index)) {
          found.add(read(handle, uuid, index, options));
        }
      } catch (NvmlException e) {
        // As HAMi: a GPU that cannot even be identified is left out; the others still serve.
        LOG.log(Level.WARNING, "left out a GPU NVML cannot identify: " + e.getMessage());
      }
    }
    this.gpus = List.copyOf(found);
  }

  private static Gpu read(NvmlDevice handle, String uuid, int index, Options options) {
    String busId = handle.pciInfo().busId();
    long memoryMiB;
    boolean healthy = true;
    boolean lost = false;
    try {
      memoryMiB = handle.memory().totalMiB();
      if (memoryMiB == 0) {
        memoryMiB = options.preConfiguredMemoryMiB();
      }
    } catch (NvmlException e) {
      if (e.error() == NvmlError.NOT_SUPPORTED) {
        memoryMiB = options.preConfiguredMemoryMiB();
      } else {
        LOG.log(Level.WARNING, "GPU " + uuid + " is unhealthy: its memory cannot be read: " + e.getMessage());
        memoryMiB = 0;
        healthy = false;
        lost = e.error() == NvmlError.GPU_IS_LOST;
      }
    }
    OptionalInt minor;
    try {
      minor = OptionalInt.of(handle.minorNumber());
    } catch (NvmlException e) {
      minor = OptionalInt.empty();
    }
    Device device = new Device(uuid, index, handle.name(), memoryMiB, numaOf(handle, busId, options.sysfs()), healthy, busId);
    return new Gpu(handle, device, minor, lost);
  }

  /** HAMi reads sysfs; NVML's own answer is the fallback where sysfs has none (as for mock GPUs). */
  private static int numaOf(NvmlDevice handle, String busId, Path sysfs) {
    // sysfs names PCI devices with a 4-digit domain; NVML's bus id has 8 digits.
    String name = (busId.startsWith("0000") && busId.length() > 12 ? busId.substring(4) : busId).toLowerCase(Locale.ROOT);
    Path file = sysfs.resolve("bus/pci/devices").resolve(name).resolve("numa_node");
    try {
      int node = Integer.parseInt(Files.readString(file, StandardCharsets.US_ASCII).strip());
      if (node >= 0) {
        return node;
      }
    } catch (IOException | NumberFormatException e) {
      // no sysfs entry (a container without /sys, a mock GPU): ask NVML
    }
    try {
      OptionalInt node = handle.numaNode();
      return node.isPresent() && node.getAsInt() >= 0 ? node.getAsInt() : 0;
    } catch (NvmlException e) {
      return 0;
    }
  }

  @Override
  public String name() {
    return NAME;
  }

  /** The NVML the source reads, e.g. for metrics of the same GPUs. */
  public Nvml nvml() {
    return nvml;
  }

  @Override
  public List<Device> devices() {
    List<Device> out = new ArrayList<>(gpus.size());
    for (Gpu g : gpus) {
      out.add(g.device.healthy() == g.healthy ? g.device : g.device.withHealthy(g.healthy));
    }
    return out;
  }

  /** The UUIDs of the GPUs that have fallen off the bus; {@link #devices()} lists them unhealthy. */
  @Override
  public Set<String> lostDevices() {
    Set<String> out = new LinkedHashSet<>();
    for (Gpu g : gpus) {
      if (g.lost) {
        out.add(g.device.uuid());
      }
    }
    return out;
  }

  /**
   * The device node of each GPU, by UUID ({@code /dev/nvidia<minor>}), for {@code
   * ContractSettings.withDeviceSpecs}; a GPU whose minor number NVML cannot tell is left out.
   */
  public Map<String, List<String>> deviceNodes() {
    Map<String, List<String>> out = new LinkedHashMap<>();
    for (Gpu g : gpus) {
      g.minorNumber.ifPresent(minor -> out.put(g.device.uuid(), List.of("/dev/nvidia" + minor)));
    }
    return out;
  }

  /**
   * How the GPUs connect, read now: the common PCI ancestor of every pair and each GPU's active NVLink
   * links.
   *
   * @throws NvmlException when NVML cannot tell (e.g. a GPU is lost)
   */
  public Topology topology() {
    Map<String, Map<String, NvmlDevice.TopologyLevel>> levels = new LinkedHashMap<>();
    Map<String, Integer> nvLinks = new LinkedHashMap<>();
    for (Gpu a : gpus) {
      Map<String, NvmlDevice.TopologyLevel> row = new LinkedHashMap<>();
      for (Gpu b : gpus) {
        if (a != b) {
          row.put(b.device.uuid(), a.handle.commonAncestor(b.handle));
        }
      }
      levels.put(a.device.uuid(), row);
      nvLinks.put(a.device.uuid(), a.handle.activeNvLinks());
    }
    return new Topology(levels, nvLinks);
  }

  /**
   * How the GPUs connect.
   *
   * @param levels per GPU UUID, the common ancestor with every other GPU
   * @param activeNvLinks per GPU UUID, its active NVLink links
   */
  public record Topology(Map<String, Map<String, NvmlDevice.TopologyLevel>> levels, Map<String, Integer> activeNvLinks) {
    /** Copies the maps. */
    public Topology {
      Map<String, Map<String, NvmlDevice.TopologyLevel>> copy = new LinkedHashMap<>();
      levels.forEach((k, v) -> copy.put(k, Map.copyOf(v)));
      levels = Collections.unmodifiableMap(copy);
      activeNvLinks = Collections.unmodifiableMap(new LinkedHashMap<>(activeNvLinks));
    }

    /** The common ancestor of two GPUs; {@link NvmlDevice.TopologyLevel#INTERNAL} for one GPU with itself. */
    public NvmlDevice.TopologyLevel between(String uuidA, String uuidB) {
      if (uuidA.equals(uuidB)) {
        return NvmlDevice.TopologyLevel.INTERNAL;
      }
      Map<String, NvmlDevice.TopologyLevel> row = levels.get(uuidA);
      NvmlDevice.TopologyLevel level = row == null ? null : row.get(uuidB);
      if (level == null) {
        throw new IllegalArgumentException("no topology between " + uuidA + " and " + uuidB);
      }
      return level;
    }
  }

  /**
   * Starts the health watcher (once) and registers {@code onChange}. Returns once every GPU is
   * registered for Xid events, so no event after the return is missed. With Xid checks switched off
   * ({@code DP_DISABLE_HEALTHCHECKS=all}) nothing is watched and {@code onChange} is never called.
   *
   * @throws DeviceSourceException when NVML cannot create an event set
   */
  @Override
  public synchronized Subscription watchHealth(Consumer<List<Device>> onChange) {
    if (closed) {
      throw new IllegalStateException("the nvml device source is closed");
    }
    listeners.add(onChange);
    if (watcher == null && !xidPolicy.checksDisabled()) {
      HealthWatcher started = new HealthWatcher();
      try {
        started.start();
      } catch (DeviceSourceException e) {
        listeners.remove(onChange);
        throw e;
      }
      watcher = started;
    }
    return () -> listeners.remove(onChange);
  }

  /**
   * Marks a GPU unhealthy (once), and lost as well when NVML says it has fallen off the bus, and tells
   * the listeners.
   */
  private void markUnhealthy(Gpu gpu, String reason) {
    boolean lostNow = !gpu.lost && isLost(gpu.handle);
    if (!gpu.healthy && !lostNow) {
      return;
    }
    if (lostNow) {
      gpu.lost = true;
    }
    gpu.healthy = false;
    LOG.log(
        Level.WARNING,
        "GPU " + gpu.device.uuid() + " (index " + gpu.device.index() + ") is unhealthy" + (lostNow ? " and has fallen off the bus: " : ": ") + reason);
    List<Device> now = devices();
    for (Consumer<List<Device>> listener : listeners) {
      try {
        listener.accept(now);
      } catch (RuntimeException e) {
        LOG.log(Level.ERROR, "a health listener failed", e);
      }
    }
  }

  /** Whether NVML says the GPU has fallen off the bus (its memory cannot be read for that reason). */
  private static boolean isLost(NvmlDevice handle) {
    try {
      handle.memory();
      return false;
    } catch (NvmlException e) {
      return e.error() == NvmlError.GPU_IS_LOST;
    }
  }

  private void markAllUnhealthy(String reason) {
    gpus.forEach(g -> markUnhealthy(g, reason));
  }

  /** Stops the health watcher and shuts NVML down. */
  @Override
  public void close() {
    HealthWatcher running;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      running = watcher;
    }
    if (running != null) {
      running.stop();
    }
    nvml.close();
  }

  /** The thread that waits for Xid events; the event set lives and dies on it. */
  private final class HealthWatcher implements Runnable {
    private final Thread thread = new Thread(this, "vgpu-nvml-health");
    private final CountDownLatch registered = new CountDownLatch(1);
    private volatile boolean stopping;
    private volatile @Nullable NvmlException startFailure;

    void start() {
      thread.setDaemon(true);
      thread.start();
      try {
        registered.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new DeviceSourceException("interrupted while GPUs were registered for health events", e);
      }
      NvmlException failure = startFailure;
      if (failure != null) {
        throw new DeviceSourceException("GPU health cannot be watched: " + failure.getMessage(), failure);
      }
    }

    void stop() {
      stopping = true;
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    @Override
    public void run() {
      NvmlEventSet events;
      try {
        events = nvml.newEventSet();
      } catch (NvmlException e) {
        startFailure = e;
        registered.countDown();
        return;
      }
      try (events) {
        try {
          for (Gpu gpu : gpus) {
            register(events, gpu);
          }
        } finally {
          registered.countDown();
        }
        while (!stopping) {
          waitOnce(events);
        }
      }
    }

    private void register(NvmlEventSet events, Gpu gpu) {
      try {
        events.registerXidEvents(gpu.handle);
      } catch (NvmlException e) {
        if (e.error() == NvmlError.NOT_SUPPORTED) {
          LOG.log(Level.WARNING, "GPU " + gpu.device.uuid() + " is too old to report Xid errors: no health check for it");
        } else {
          markUnhealthy(gpu, "it cannot be registered for Xid events: " + e.getMessage());
        }
      }
    }

    private void waitOnce(NvmlEventSet events) {
      NvmlEventSet.XidEvent event;
      try {
        var next = events.await(HEALTH_WAIT_MILLIS);
        if (next.isEmpty()) {
          return;
        }
        event = next.get();
      } catch (NvmlException e) {
        markAllUnhealthy("waiting for Xid events failed: " + e.getMessage());
        pause();
        return;
      }
      if (!event.isXidCriticalError() || !xidPolicy.marksUnhealthy(event.xid())) {
        LOG.log(Level.INFO, "ignored event type " + event.eventType() + " Xid " + event.xid());
        return;
      }
      String uuid;
      try {
        uuid = event.device().uuid();
      } catch (NvmlException e) {
        markAllUnhealthy("Xid " + event.xid() + " on a GPU whose UUID NVML cannot tell: " + e.getMessage());
        return;
      }
      for (Gpu gpu : gpus) {
        if (gpu.device.uuid().equals(uuid)) {
          markUnhealthy(gpu, "Xid " + event.xid());
        }
      }
    }

    /** After a failed wait, so that a persistent failure does not spin. */
    private void pause() {
      try {
        Thread.sleep(HEALTH_WAIT_MILLIS);
      } catch (InterruptedException e) {
        stopping = true;
      }
    }
  }
}

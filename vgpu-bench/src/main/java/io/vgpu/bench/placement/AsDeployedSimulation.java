package io.vgpu.bench.placement;

import io.vgpu.api.ContainerRequest;
import io.vgpu.api.DeviceConstraints;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.PodRequest;
import io.vgpu.api.PolicyOverrides;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.core.CompiledRequest;
import io.vgpu.core.Engine;
import io.vgpu.core.EngineConfig;
import io.vgpu.core.FilterResult;
import io.vgpu.core.NodeDevices;
import io.vgpu.core.Placement;
import io.vgpu.core.ReserveResult;
import io.vgpu.core.policy.TargetWorkload;
import io.vgpu.k8s.kubescheduler.FeasibleNodes;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.function.BiConsumer;

/**
 * One run of the protocol with the scheduler as it is deployed ({@code placement-bench --as-deployed}):
 * the engine is built as {@code vgpu scheduler} builds it, with the policies found on the class path,
 * each of which starts from nothing and learns online; nodes register their GPUs (type = the node's
 * model) and their allocatable CPU as the node agent and the scheduler's node informer report them; and
 * every GPU pod goes through exactly the engine calls the extender makes for a filter in node-cache
 * mode: compile the request, whose {@code hami.io/gpu-scheduler-policy} names the policy (and {@code
 * nvidia.com/use-gputype} the pod's GPU models), filter it over the nodes kube-scheduler found feasible,
 * and reserve the placement. kube-scheduler's part is played by {@link KubeDefaultProfile}: it passes
 * the nodes whose CPU and memory fit, in the run's tie order, and places the CPU-only pods, which never
 * reach the extender. Each placed pod's CPU is then reported to the engine as the pod informer reports
 * a bound pod.
 *
 * <p>Which of the fitting nodes kube-scheduler passes follows its {@code percentageOfNodesToScore}
 * ({@link FeasibleNodes}): each scheduling cycle walks the nodes in the tie order from where the
 * previous cycle stopped, and stops once it has found its share of them feasible. With the chart's 100
 * that is every fitting node, in the tie order, for every pod. With less, a pod whose extender finds no
 * node in its share is tried again on the next share, as kube-scheduler requeues a pod the extender
 * refused and tries it again from where the last cycle stopped; only once the shares have covered every
 * node (nothing changes in between) does the pod fit nowhere, which is the protocol's refusal. Two
 * kube-schedulers sample: the one the chart deploys, for the pods handed to vgpu's scheduler, and the
 * cluster's own for the CPU-only pods it places; each keeps its own start, and both take the run's
 * percentage, so that the runs differ in that alone.
 *
 * <p>The cluster is the oracle run's ({@link SimCluster}): 16,000 MiB and 100 compute units per GPU,
 * sharers not limited, a pod's GPU share asked as {@code nvidia.com/gpumem} (16 MiB per milli) and
 * {@code nvidia.com/gpucores} (one per 10 milli). A mirror of it, updated from each grant, gives the
 * reports the same measures as the oracle's.
 */
final class AsDeployedSimulation {
  /** The namespace of the benchmark's pods. */
  static final String NAMESPACE = "bench";

  private static final String CONTAINER = "main";

  /** Who places the pods that ask for no GPU. */
  enum CpuOnlyPods {
    /** kube-scheduler's default profile, as deployed: such pods never reach the extender. */
    DEFAULT_SCHEDULER("default-scheduler"),
    /**
     * The pod's policy through the engine: what an extender that placed CPU-only pods would do. The
     * deployed one does not (kube-scheduler does not call it for them, and it passes a pod without
     * devices through unfiltered); this mode measures what that costs.
     */
    POLICY("policy");

    /** The name on the command line and in reports. */
    final String label;

    CpuOnlyPods(String label) {
      this.label = label;
    }

    /**
     * The mode named {@code label}.
     *
     * @throws BenchInputException naming the value
     */
    static CpuOnlyPods parse(String label) {
      for (CpuOnlyPods mode : values()) {
        if (mode.label.equals(label.trim())) {
          return mode;
        }
      }
      throw new BenchInputException("--cpu-only-pods value '" + label + "' is not a mode (known: default-scheduler, policy)");
    }
  }

  /**
   * How the deployment the run plays is set up.
   *
   * @param cpuOnlyPods who places the pods that ask for no GPU
   * @param percentageOfNodesToScore kube-scheduler's {@code percentageOfNodesToScore}, 0 to 100 (0: its
   *     adaptive share)
   */
  record Setup(CpuOnlyPods cpuOnlyPods, int percentageOfNodesToScore) {
    /** What the chart deploys: {@code percentageOfNodesToScore: 100}. */
    static final int CHART_PERCENTAGE = 100;

    Setup {
      if (percentageOfNodesToScore < 0 || percentageOfNodesToScore > 100) {
        throw new IllegalArgumentException("percentageOfNodesToScore " + percentageOfNodesToScore + " is not from 0 to 100");
      }
    }

    /** As the chart deploys kube-scheduler, with the CPU-only pods placed as given. */
    static Setup chart(CpuOnlyPods cpuOnlyPods) {
      return new Setup(cpuOnlyPods, CHART_PERCENTAGE);
    }

    /** How many feasible nodes a scheduling cycle stops at in a cluster of {@code nodes}. */
    int feasibleNodesToFind(int nodes) {
      return FeasibleNodes.numToFind(percentageOfNodesToScore, nodes);
    }
  }

  private static final String DOES_NOT_FIT = "Insufficient cpu or memory";

  private final SimCluster cluster;
  private final SimCluster.View view;
  private final Engine engine;
  private final PolicyOverrides overrides;
  private final CpuOnlyPods cpuOnlyPods;
  private final int percentageOfNodesToScore;
  private final int[] nodeOrder;
  /** Node names in the tie order: the order kube-scheduler lists the nodes in. */
  private final List<String> listed;
  /** The kube-scheduler the chart deploys: it hands vgpu's scheduler the pods that name it. */
  private final FeasibleNodes chartKubeScheduler = new FeasibleNodes();
  /** The cluster's own kube-scheduler: it places the CPU-only pods vgpu's scheduler is not handed. */
  private final FeasibleNodes clusterKubeScheduler = new FeasibleNodes();
  private BiConsumer<TracePod, List<String>> cycleListener = (pod, nodes) -> {};
  private final Map<String, Integer> nodeIndex = new HashMap<>();
  private final TargetWorkload measure;
  private final double[] nodeFragmentation;
  private final int[] gpus = new int[64];

  /**
   * A cluster of the given nodes, registered with a fresh engine.
   *
   * @param policy the policy every pod's annotation names
   * @param nodeOrder the order kube-scheduler lists feasible nodes in (node positions)
   * @param measure the workload the reports measure fragmentation against (the trace's typical pods)
   * @param setup who places the pods that ask for no GPU, and kube-scheduler's percentage of nodes to score
   */
  AsDeployedSimulation(List<TraceNode> nodes, String policy, int[] nodeOrder, TargetWorkload measure, Setup setup) {
    this.cluster = new SimCluster(nodes);
    this.cpuOnlyPods = setup.cpuOnlyPods();
    this.percentageOfNodesToScore = setup.percentageOfNodesToScore();
    this.view = cluster.view();
    this.engine = Engine.builder().config(EngineConfig.DEFAULT).build();
    this.overrides = PolicyCatalog.annotationsOf(policy);
    this.nodeOrder = nodeOrder;
    List<String> listed = new ArrayList<>(nodeOrder.length);
    for (int i : nodeOrder) {
      listed.add(nodes.get(i).name());
    }
    this.listed = List.copyOf(listed);
    this.measure = measure;
    this.nodeFragmentation = new double[cluster.nodeCount];
    for (int i = 0; i < cluster.nodeCount; i++) {
      TraceNode node = nodes.get(i);
      nodeIndex.put(node.name(), i);
      if (node.gpus() > 0) {
        engine.upsertNode(NodeDevices.of(node.name(), devicesOf(node)));
      }
      engine.setNodeCpu(node.name(), node.cpuMilli());
      nodeFragmentation[i] = measure.fragmentationOf(view.at(i));
    }
  }

  /** The GPUs a trace node registers, as the node agent registers them. */
  static List<SchedulableDevice> devicesOf(TraceNode node) {
    List<SchedulableDevice> devices = new ArrayList<>(node.gpus());
    for (int d = 0; d < node.gpus(); d++) {
      devices.add(
          new SchedulableDevice(
              SimCluster.uuid(node.name(), d), d, node.model(), SimCluster.GPU_MEMORY_MIB, 100, SimCluster.UNLIMITED_SHARERS, 0, true, "hami-core"));
    }
    return devices;
  }

  /**
   * Runs the protocol for one seed, drawing from the seed's random source in the oracle run's order
   * (the shuffle, the inflation or deflation, the node order for ties), so both runs see the same pods
   * in the same order.
   */
  static SeedResult run(PreparedTrace trace, String policy, Setup setup, double inflate, long seed) {
    long start = System.nanoTime();
    SplittableRandom random = new SplittableRandom(seed);
    List<TraceNode> nodes = trace.trace().nodes();
    long capacity = nodes.stream().mapToLong(TraceNode::gpus).sum() * TracePod.WHOLE_GPU;
    List<TracePod> arrivals = Arrivals.of(trace.pods(), capacity, inflate, random);
    int[] nodeOrder = Simulation.tieOrder(nodes, random);
    AsDeployedSimulation sim = new AsDeployedSimulation(nodes, policy, nodeOrder, trace.typical(), setup);
    Recorder recorder = new Recorder(arrivals.size(), capacity);
    long arrived = 0;
    for (int p = 0; p < arrivals.size(); p++) {
      TracePod pod = arrivals.get(p);
      arrived += pod.totalGpuMilli();
      sim.schedule(pod, refOf(p, pod));
      recorder.record(arrived, sim.cluster.usedMilli(), sim.clusterFragmentation());
    }
    return recorder.result(seed, (System.nanoTime() - start) / 1e9);
  }

  /** The pod's name in the run: its position and the trace's name, since clones repeat names. */
  static PodRef refOf(int position, TracePod pod) {
    return new PodRef(NAMESPACE, String.format("p%05d-%s", position, pod.name()));
  }

  /** The engine the run drives. */
  Engine engine() {
    return engine;
  }

  /** Tells {@code listener} the nodes each scheduling cycle hands on, with the pod it is for. */
  void onCycle(BiConsumer<TracePod, List<String>> listener) {
    this.cycleListener = listener;
  }

  /**
   * Places one pod as the deployment would: a GPU pod through the extender's engine calls, a CPU-only
   * pod by kube-scheduler's default scores, each cycle over the nodes its kube-scheduler hands on.
   * Returns the node, or empty when the pod fits nowhere.
   */
  Optional<String> schedule(TracePod pod, PodRef ref) {
    FeasibleNodes kubeScheduler = pod.gpus() == 0 && cpuOnlyPods == CpuOnlyPods.DEFAULT_SCHEDULER ? clusterKubeScheduler : chartKubeScheduler;
    int offered = 0;
    int feasibleCount = -1;
    while (true) {
      List<String> handedOn = cycle(kubeScheduler, pod);
      if (handedOn.isEmpty()) {
        return Optional.empty();
      }
      Optional<String> node = scheduleWithin(handedOn, pod, ref);
      if (node.isPresent()) {
        return node;
      }
      // Refused: kube-scheduler tries the pod again from where its last cycle stopped, until the
      // cycles have been through every fitting node; the cluster does not change in between.
      if (feasibleCount < 0) {
        feasibleCount = feasible(pod).size();
      }
      offered += handedOn.size();
      if (offered >= feasibleCount) {
        return Optional.empty();
      }
    }
  }

  /** One scheduling cycle of {@code kubeScheduler}: the fitting nodes it finds from where it last stopped. */
  private List<String> cycle(FeasibleNodes kubeScheduler, TracePod pod) {
    List<String> handedOn =
        kubeScheduler.select(
            listed, percentageOfNodesToScore, name -> KubeDefaultProfile.feasible(cluster, nodeIndex.get(name), pod) ? null : DOES_NOT_FIT, new HashMap<>());
    cycleListener.accept(pod, handedOn);
    return handedOn;
  }

  /** Places one pod on one of {@code feasible}, the nodes of one cycle, or answers empty. */
  private Optional<String> scheduleWithin(List<String> feasible, TracePod pod, PodRef ref) {
    int node;
    int count = 0;
    if (pod.gpus() == 0) {
      node = cpuOnlyPods == CpuOnlyPods.POLICY ? bestByPolicy(feasible, pod, ref) : bestByDefaultProfile(feasible, pod);
    } else {
      Optional<PodGrant> grant = filterAndReserve(requestOf(pod, ref), feasible);
      if (grant.isEmpty()) {
        return Optional.empty();
      }
      node = nodeIndex.get(grant.get().node());
      for (DeviceGrant device : grant.get().containers().get(0).devices()) {
        if (device.memoryMiB() != pod.gpuMilli() * SimCluster.MIB_PER_MILLI) {
          throw new IllegalStateException("pod " + ref + " was granted " + device.memoryMiB() + " MiB on " + device.uuid() + ", not its share");
        }
        gpus[count++] = positionOf(device.uuid());
      }
    }
    if (node < 0) {
      return Optional.empty();
    }
    if (count != pod.gpus()) {
      throw new IllegalStateException("pod " + ref + " asked for " + pod.gpus() + " GPUs and was granted " + count);
    }
    cluster.place(node, pod, gpus);
    // Bound: the pod informer reports the pod on its node, which counts its CPU there.
    engine.setPodCpu(ref, cluster.names[node], pod.cpuMilli());
    nodeFragmentation[node] = measure.fragmentationOf(view.at(node));
    return Optional.of(cluster.names[node]);
  }

  /**
   * Every node kube-scheduler finds feasible for the pod (CPU and memory), in the order it lists them:
   * what a cycle hands on with the chart's percentage, and what the cycles cover before a pod is refused.
   */
  List<String> feasible(TracePod pod) {
    List<String> feasible = new ArrayList<>(nodeOrder.length);
    for (int i : nodeOrder) {
      if (KubeDefaultProfile.feasible(cluster, i, pod)) {
        feasible.add(cluster.names[i]);
      }
    }
    return feasible;
  }

  /**
   * The extender's filter in node-cache mode, as far as the engine sees it: give back what the pod
   * held, compile, filter over kube-scheduler's nodes, reserve (again after a lost race, as the
   * extender does).
   */
  private Optional<PodGrant> filterAndReserve(PodRequest request, List<String> candidates) {
    CompiledRequest compiled = engine.compile(request);
    engine.release(request.pod());
    for (int attempt = 0; attempt < 3; attempt++) {
      FilterResult result = engine.filter(compiled, candidates, false);
      if (result.placement().isEmpty()) {
        return Optional.empty();
      }
      Placement placement = result.placement().get();
      ReserveResult reserved = engine.reserve(placement);
      if (reserved.reserved()) {
        return Optional.of(placement.grant());
      }
      if (reserved.status() != ReserveResult.Status.CONFLICT) {
        throw new IllegalStateException("pod " + request.pod() + ": " + reserved.message());
      }
    }
    throw new IllegalStateException("pod " + request.pod() + ": every fitting node was taken by concurrent reservations");
  }

  /**
   * The request the extender parses from the pod the trace describes: one container asking for the
   * pod's GPUs with {@code nvidia.com/gpumem} and {@code nvidia.com/gpucores} for its share, {@code
   * nvidia.com/use-gputype} for its models, the policy's annotations, and its CPU request.
   */
  PodRequest requestOf(TracePod pod, PodRef ref) {
    ContainerRequest container =
        new ContainerRequest(CONTAINER, pod.gpus(), (long) pod.gpuMilli() * SimCluster.MIB_PER_MILLI, ContainerRequest.UNSET, SimCluster.coresOf(pod.gpuMilli()));
    DeviceConstraints constraints = DeviceConstraints.NONE.withTypes(pod.gpuSpec(), List.of());
    return new PodRequest(ref, List.of(), List.of(container), constraints, overrides, pod.cpuMilli());
  }

  /**
   * The policy's choice for a CPU-only pod, as an extender that placed such pods would make it:
   * compile and filter (the pod takes no card, so nothing is reserved).
   */
  private int bestByPolicy(List<String> feasible, TracePod pod, PodRef ref) {
    PodRequest request = new PodRequest(ref, List.of(), List.of(ContainerRequest.none(CONTAINER)), DeviceConstraints.NONE, overrides, pod.cpuMilli());
    Optional<Placement> placement = engine.filter(engine.compile(request), feasible, false).placement();
    return placement.isEmpty() ? -1 : nodeIndex.get(placement.get().node());
  }

  /** kube-scheduler's choice for a pod no extender handles: the best default score, the first of equals. */
  private int bestByDefaultProfile(List<String> feasible, TracePod pod) {
    int best = -1;
    long bestScore = Long.MIN_VALUE;
    for (String name : feasible) {
      int i = nodeIndex.get(name);
      long score = KubeDefaultProfile.score(cluster, i, pod);
      if (score > bestScore) {
        best = i;
        bestScore = score;
      }
    }
    return best;
  }

  private static int positionOf(String uuid) {
    return Integer.parseInt(uuid.substring(uuid.lastIndexOf('/') + 1));
  }

  /** GPU share allocated so far, in milli-GPU. */
  long usedMilli() {
    return cluster.usedMilli();
  }

  private double clusterFragmentation() {
    double sum = 0;
    for (double f : nodeFragmentation) {
      sum += f;
    }
    return sum;
  }
}

package io.vgpu.bench.placement;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * A cluster and a workload to replay: a node list and a pod list in the CSV format of the Alibaba
 * GPU-sharing trace. Node files have {@code sn,cpu_milli,memory_mib,gpu,model}; pod files have {@code
 * name,cpu_milli,memory_mib,num_gpu,gpu_milli} and optionally {@code gpu_spec} (models separated by
 * {@code |}); other columns are ignored.
 *
 * @param name the workload's name (the pod file's name without extension)
 * @param nodes the nodes, in file order
 * @param pods the pods, in file order
 */
public record Trace(String name, List<TraceNode> nodes, List<TracePod> pods) {

  /** Copies the lists. */
  public Trace {
    nodes = List.copyOf(nodes);
    pods = List.copyOf(pods);
  }

  /**
   * Reads a node file and a pod file.
   *
   * @throws BenchInputException naming the file, line, column and value of the first problem
   */
  public static Trace read(Path nodeFile, Path podFile) {
    List<TraceNode> nodes = readNodes(nodeFile);
    List<TracePod> pods = readPods(podFile);
    String file = String.valueOf(podFile.getFileName());
    int dot = file.lastIndexOf('.');
    return new Trace(dot > 0 ? file.substring(0, dot) : file, nodes, pods);
  }

  static List<TraceNode> readNodes(Path file) {
    List<TraceNode> nodes = new ArrayList<>();
    Set<String> names = new HashSet<>();
    CsvFile.of(file, "nodes file")
        .rows(
            List.of("sn", "cpu_milli", "memory_mib", "gpu", "model"),
            row -> {
              String name = row.text("sn");
              if (name.isEmpty()) {
                throw row.error("column 'sn' is empty");
              }
              if (!names.add(name)) {
                throw row.error("column 'sn' value '" + name + "' names a node a second time");
              }
              int gpus = row.gpuCount("gpu");
              nodes.add(new TraceNode(name, row.count("cpu_milli"), row.count("memory_mib"), gpus, row.text("model")));
            });
    if (nodes.stream().mapToLong(TraceNode::gpus).sum() == 0) {
      throw new BenchInputException(file + ": nodes file has no GPU (column 'gpu' is 0 on every node)");
    }
    return nodes;
  }

  static List<TracePod> readPods(Path file) {
    List<TracePod> pods = new ArrayList<>();
    CsvFile.of(file, "pods file")
        .rows(
            List.of("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"),
            row -> {
              int gpus = row.gpuCount("num_gpu");
              long milli = row.count("gpu_milli");
              List<String> spec =
                  Arrays.stream(row.optionalText("gpu_spec").split("\\|")).map(String::trim).filter(s -> !s.isEmpty()).toList();
              pods.add(
                  new TracePod(
                      row.text("name"),
                      row.count("cpu_milli"),
                      row.count("memory_mib"),
                      gpus,
                      (int) Math.min(milli, TracePod.WHOLE_GPU),
                      spec));
            });
    if (pods.isEmpty()) {
      throw new BenchInputException(file + ": pods file has no pod");
    }
    return pods;
  }

  /** Total GPUs of the cluster. */
  public long totalGpus() {
    return nodes.stream().mapToLong(TraceNode::gpus).sum();
  }
}

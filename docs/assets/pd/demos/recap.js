// recap (summary): one compact figure, TTFT against prompt length above TPS against prompt length.
import { createChart } from "../charts.js";
import { prepareStage } from "../stage.js";

export function mount(demo, data) {
  const { stage, text } = prepareStage(demo, data);
  stage.append(createChart(data.figures.recap, text).node);
}

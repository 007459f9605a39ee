# M-Act per layer (last step, mean over seeds; log scale)
# written by `gated report`; run `gnuplot activations-m_act.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'activations-m_act.svg'
set grid
set key outside right top
set title 'activations'
set xlabel 'layer'
set xtics 1
set logscale y
set ylabel 'M-Act (max |h| of the layer output, log scale)'
plot 'activations-m_act.dat' index 0 using 1:2 with linespoints title 'baseline', \
     'activations-m_act.dat' index 1 using 1:2 with linespoints title 'G1-elementwise', \
     'activations-m_act.dat' index 2 using 1:2 with linespoints title 'G1-silu', \
     'activations-m_act.dat' index 3 using 1:2 with linespoints title 'G1-elementwise-tanh', \
     'activations-m_act.dat' index 4 using 1:2 with linespoints title 'G1-elementwise-identity', \
     'activations-m_act.dat' index 5 using 1:2 with linespoints title 'G1-headwise', \
     'activations-m_act.dat' index 6 using 1:2 with linespoints title 'G1-headwise-silu', \
     'activations-m_act.dat' index 7 using 1:2 with linespoints title 'G1-headwise-tanh', \
     'activations-m_act.dat' index 8 using 1:2 with linespoints title 'G1-headwise-identity'
set terminal pngcairo size 960,560 noenhanced
set output 'activations-m_act.png'
replot
set output

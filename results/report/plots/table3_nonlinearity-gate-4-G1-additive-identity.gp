# gate-score histogram per layer, last step, counts summed over seeds
# written by `gated report`; run `gnuplot table3_nonlinearity-gate-4-G1-additive-identity.gp` in this directory
set terminal svg size 960,560 dynamic noenhanced background rgb 'white'
set output 'table3_nonlinearity-gate-4-G1-additive-identity.svg'
set grid
set key below
set title 'table3_nonlinearity: gate scores of G1-additive-identity (last step, 3 runs summed)'
set xlabel 'gate score'
set ylabel 'fraction of scores'
set xrange [-2:2]
plot 'table3_nonlinearity-gate-4-G1-additive-identity.dat' index 0 using 1:2 with histeps lw 2 lc rgb '#0072b2' dt 1 title 'layer 0', \
     'table3_nonlinearity-gate-4-G1-additive-identity.dat' index 1 using 1:2 with histeps lw 2 lc rgb '#d55e00' dt 1 title 'layer 1', \
     'table3_nonlinearity-gate-4-G1-additive-identity.dat' index 2 using 1:2 with histeps lw 2 lc rgb '#009e73' dt 1 title 'layer 2', \
     'table3_nonlinearity-gate-4-G1-additive-identity.dat' index 3 using 1:2 with histeps lw 2 lc rgb '#cc79a7' dt 1 title 'layer 3'
set terminal pngcairo size 960,560 noenhanced
set output 'table3_nonlinearity-gate-4-G1-additive-identity.png'
replot
set output

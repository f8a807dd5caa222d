# Average order value by customer segment, and monthly revenue as a chart.
import pandas as pd
import matplotlib.pyplot as plt

orders = pd.read_csv('data/sales.csv', parse_dates=['order_date'])
print(f'{len(orders)} orders from {orders.order_date.min():%Y-%m-%d} to {orders.order_date.max():%Y-%m-%d}')

by_segment = orders.groupby('customer_segment')['order_value'].agg(['count', 'mean', 'sum']).round(2)
by_segment.columns = ['orders', 'average_order_value', 'revenue']

monthly = orders.set_index('order_date')['order_value'].resample('M').sum()
ax = monthly.plot(kind='bar', figsize=(9, 4), title='Revenue by month')
ax.set_xticklabels([d.strftime('%b') for d in monthly.index], rotation=0)
ax.set_ylabel('Revenue')
plt.tight_layout()
plt.savefig('revenue_by_month.png')
by_segment.to_csv('segments.csv')
by_segment.sort_values("average_order_value", ascending=False)
